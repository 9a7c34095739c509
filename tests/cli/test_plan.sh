#!/usr/bin/env bash
# End-to-end test of `gpushare plan`: every target's output against its
# golden file (tests/plan/golden/, from the committed fixtures in
# tests/plan/*/results.jsonl; GPUSHARE_UPDATE_GOLDEN=1 rewrites them), --out
# (a file, or slurm's directory), --json, the refusals (exit 14, one line)
# and the bad options (exit 2).
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE:?set by ctest}" "${GPUSHARE_SOURCE_DIR:?set by ctest}"
SRC=$GPUSHARE_SOURCE_DIR
FIX=$SRC/tests/plan
GOLD=$FIX/golden
tmp=$(mktemp -d /tmp/gpushare-plan-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
version=$("$GPUSHARE" --version | awk '{ print $2 }')

# golden NAME ARGS...: gpushare plan ARGS matches golden/NAME (the version
# written as VERSION), exit 0.
golden() {
	local name=$1
	shift
	run plan "$@"
	sed "s/(gpushare $version)/(gpushare VERSION)/" "$tmp/out" >"$tmp/$name"
	if [[ ${GPUSHARE_UPDATE_GOLDEN:-} == 1 ]]; then
		cp "$tmp/$name" "$GOLD/$name"
	fi
	check "plan $* : exit 0 (got $rc: $(head -c 300 "$tmp/err"))" test "$rc" -eq 0
	if cmp -s "$tmp/$name" "$GOLD/$name"; then
		ok "plan $* matches golden/$name"
	else
		fail "plan $* differs from golden/$name:"
		diff -u "$GOLD/$name" "$tmp/$name" | head -40 || true
	fi
}

echo "== golden outputs of every target"
golden env-mps-split.env "$FIX/mps-h100" --for env --gpu-model H100
golden env-timeslice.env "$FIX/timeslice-a100" --for env
golden env-slo.env "$FIX/mps-h100" --for env --goal slo --slo-p99 2ms --mps-pipe-dir /run/nvidia-mps
golden device-plugin-mps.yaml "$FIX/mps-h100" --for k8s-device-plugin --strategy mps
check "device plugin, plain mps: the 100/replicas warning on stderr" grep -q "100/replicas" "$tmp/err"
golden device-plugin-timeslice.yaml "$FIX/timeslice-a100" --for k8s-device-plugin --name a100-timeslice
golden dra-mps-split.yaml "$FIX/mps-h100" --for k8s-dra --mem-per-client 10G
golden dra-timeslice.yaml "$FIX/timeslice-a100" --for k8s-dra
golden mig-parted.yaml "$FIX/mps-h100" --for mig-parted
golden mig-parted-mixed.yaml "$FIX/mig-mixed" --for mig-parted
golden slurm-shard.txt "$FIX/timeslice-a100" --for slurm --gpu-model A100
golden slurm-mps.txt "$FIX/mps-h100" --for slurm --nodes 'gpu-node-[01-04]' --gpus-per-node 4
golden plan.json "$FIX/mps-h100" --for k8s-dra --json

echo "== the comment block"
run plan "$FIX/mps-h100" --for env
check "it names the GPU" grep -q "^# GPU: NVIDIA H100 80GB HBM3" "$tmp/out"
check "it states the gain over timeslice with its interval" \
	grep -qE "^# Gain at 4 workers: .*the throughput of timeslice \([0-9.]+x-[0-9.]+x" "$tmp/out"
check "it names the command that measured" grep -q "^# Measured by: gpushare sweep --out sw" "$tmp/out"
run plan "$FIX/mps-h100" --for mig-parted
check "mig-parted plans the mig runs: 7 x 1g.10gb" grep -q '"1g.10gb": 7' "$tmp/out"
run plan "$FIX/mig-mixed" --for mig-parted
check "mig-parted plans a mixed layout as measured: 1g.10gb x2 + 2g.20gb + 3g.40gb, each profile its count" \
	bash -c "grep -q '\"1g.10gb\": 2' '$tmp/out' && grep -q '\"2g.20gb\": 1' '$tmp/out' && grep -q '\"3g.40gb\": 1' '$tmp/out' && ! grep -q '\"1g.10gb\": 4' '$tmp/out'"
check "  under a name of its layout" grep -q "^  gpushare-1g.10gbx2-2g.20gbx1-3g.40gbx1:" "$tmp/out"
run plan "$FIX/mig-mixed" --for mig-parted --json
check "  and --json gives every profile with its count" \
	grep -q '"mig_instances":4,"mig_layout":{"1g.10gb":2,"2g.20gb":1,"3g.40gb":1}' "$tmp/out"
run plan "$FIX/mps-h100" --for mig-parted --goal slo --slo-p99 50ms
check "mig-parted under --goal slo plans the mig runs too, and states the bound and their p99" \
	bash -c "grep -q '\"1g.10gb\": 7' '$tmp/out' && grep -q '^# Goal: highest throughput with median p99 under 50.0 ms; its p99: ' '$tmp/out'"
run plan "$FIX/mps-h100" --for mig-parted --goal slo --slo-p99 2ms
check "  and refuses when mig never met the bound (exit 14), whatever else did" \
	bash -c "[[ $rc -eq 14 ]] && grep -q \"'mig' never kept its median p99 under 2.00 ms\" '$tmp/err'"

echo "== --out"
run plan "$FIX/mps-h100" --for env --gpu-model H100 --out "$tmp/mps.env"
check "--out FILE: exit 0, nothing on stdout" test "$rc" -eq 0 -a ! -s "$tmp/out"
check "--out FILE: the same as the golden output" \
	bash -c "sed 's/(gpushare $version)/(gpushare VERSION)/' '$tmp/mps.env' | cmp -s - '$GOLD/env-mps-split.env'"
run plan "$FIX/mps-h100" --for k8s-dra --mem-per-client 10G --out "$tmp/claim"
check "--for k8s-dra --out DIR: exit 0, nothing on stdout" test "$rc" -eq 0 -a ! -s "$tmp/out"
check "--for k8s-dra --out DIR: resourceclaimtemplate.yaml as printed, and the chart's values.yaml" \
	bash -c "sed 's/(gpushare $version)/(gpushare VERSION)/' '$tmp/claim/resourceclaimtemplate.yaml' |
		cmp -s - '$GOLD/dra-mps-split.yaml' && grep -qx '  MPSSupport: true' '$tmp/claim/values.yaml'"
run plan "$FIX/timeslice-a100" --for slurm --out "$tmp/slurm"
check "--for slurm --out DIR: gres.conf, slurm.conf and an executable job.sh" \
	bash -c "test $rc -eq 0 -a -s '$tmp/slurm/gres.conf' -a -s '$tmp/slurm/slurm.conf' -a -x '$tmp/slurm/job.sh'"
check "job.sh starts with #!/bin/bash and passes bash -n" \
	bash -c "head -1 '$tmp/slurm/job.sh' | grep -qx '#!/bin/bash' && bash -n '$tmp/slurm/job.sh'"
ln -s /nonexistent "$tmp/link.yaml"
run plan "$FIX/mps-h100" --for env --out "$tmp/link.yaml"
check "--out onto a symbolic link: exit 11 (got $rc)" test "$rc" -eq 11

echo "== refusals: exit 14, one line"
refused() { # refused WHAT PATTERN ARGS...
	local what=$1 pat=$2
	shift 2
	run plan "$@"
	check "$what: exit 14 (got $rc)" test "$rc" -eq 14
	# Warnings about corrupt lines may come first; the refusal is one line.
	if [[ ! -s $tmp/out && $(grep -c 'plan: refused: ' "$tmp/err") -eq 1 && $(grep -vc 'warning: ' "$tmp/err") -eq 1 ]] &&
		grep 'plan: refused: ' "$tmp/err" | grep -qF -- "$pat"; then
		ok "$what: one line naming the reason ($(grep 'refused' "$tmp/err"))"
	else
		fail "$what: one line naming '$pat'; got: $(cat "$tmp/err")"
	fi
}
refused "no successful run" "no successful run" "$FIX/failed" --for env
refused "another GPU model" "measured on 'NVIDIA H100 80GB HBM3'" "$FIX/mps-h100" --for slurm --gpu-model A100
refused "a model that is a prefix only" "measured on" "$FIX/mps-h100" --for env --gpu-model H10
refused "streams for slurm" "streams" "$FIX/mps-h100" --for slurm --strategy streams
refused "sequential for the device plugin" "reference" "$FIX/mps-h100" --for k8s-device-plugin --strategy sequential
refused "mig for slurm" "cannot express 'mig'" "$FIX/mps-h100" --for slurm --strategy mig
refused "mig-parted without mig runs" "no successful 'mig' run" "$FIX/timeslice-a100" --for mig-parted
refused "one process per GPU" "one process per GPU" "$FIX/one-worker" --for k8s-dra
# 2 noisy runs a cell: 1 worker (2780, 2800 items/s) cannot be told from 4
# (4300, 6240): refused with the report's sentence, never "no sharing".
refused "an unsettled number of workers" "timeslice: cannot tell 1 worker from 4 workers with 2 runs; " \
	"$FIX/unsettled" --for env
check "  with the runs that would settle it" \
	grep -qE "with 2 runs; [0-9]+ more runs a side would settle a difference of [0-9]+%$" "$tmp/err"
check "  not as one process per GPU" bash -c "! grep -q 'no sharing to configure' '$tmp/err'"
refused "  for every target and an asked strategy" "cannot tell 1 worker from 4 workers" "$FIX/unsettled" --for slurm --strategy timeslice
refused "no cell under the p99 bound" "p99 under" "$FIX/mps-h100" --for env --goal slo --slo-p99 1us
# A plan needs a GPU measurement: results without a GPU (no driver) or of a
# CPU-only workload (spin) are refused for every target, unless --template.
mkdir "$tmp/nogpu" "$tmp/spin"
sed -e 's/"gpu":{"index":0,"name":"[^"]*","uuid":"[^"]*"}/"gpu":null/' -e 's/"driver_version":"[^"]*"/"driver_version":null/' \
	"$FIX/timeslice-a100/results.jsonl" >"$tmp/nogpu/results.jsonl"
sed -e 's/"tiny/"spin/g' "$FIX/timeslice-a100/results.jsonl" >"$tmp/spin/results.jsonl"
for target in slurm k8s-device-plugin k8s-dra env; do
	refused "no GPU named, --for $target" "the results name no GPU" "$tmp/nogpu" --for "$target"
	refused "a CPU-only workload, --for $target" "'spin' runs on CPUs only" "$tmp/spin" --for "$target"
done
run plan "$tmp/spin" --for slurm --template
check "--template: a plan whose header says it is a template only (got $rc)" \
	bash -c "[[ $rc -eq 0 ]] && grep -q '^# Warning: a template only, not a measured plan' '$tmp/out'"
printf '{"gpushare_sweep_record":1}\n' >"$tmp/results.jsonl"
refused "no usable run" "no usable run" "$tmp" --for env

echo "== usage errors: exit 2"
usage_error() { # usage_error WHAT PATTERN ARGS...
	local what=$1 pat=$2
	shift 2
	run plan "$@"
	if [[ $rc -eq 2 && $(wc -l <"$tmp/err") -eq 1 && ! -s $tmp/out ]] && grep -qF -- "$pat" "$tmp/err"; then
		ok "$what: exit 2, one line ($(cat "$tmp/err"))"
	else
		fail "$what: exit 2 and one line naming '$pat'; got $rc: $(cat "$tmp/err")"
	fi
}
usage_error "no --for" "--for TARGET is required" "$FIX/mps-h100"
usage_error "unknown target" "invalid --for 'kubernetes'" "$FIX/mps-h100" --for kubernetes
usage_error "unknown goal" "invalid --goal" "$FIX/mps-h100" --for env --goal fast
usage_error "--goal slo without a bound" "needs --slo-p99" "$FIX/mps-h100" --for env --goal slo
usage_error "no directory" "no directory" --for env
usage_error "a bad Kubernetes name" "not a Kubernetes name" "$FIX/mps-h100" --for k8s-dra --name Bad_Name
usage_error "a mig-parted name with a line break" "not a mig-parted config name" "$FIX/mps-h100" --for mig-parted --name $'x\ny'
usage_error "a node list Slurm cannot parse" "it holds white space" "$FIX/mps-h100" --for slurm --nodes "a b"
usage_error "a device file with '#'" "starts a comment" "$FIX/mps-h100" --for slurm --device-file "/dev/nvidia#0"
usage_error "a Kubernetes name with an empty part" "not a Kubernetes name" "$FIX/mps-h100" --for k8s-dra --name a..b
usage_error "a Kubernetes name with a part ending in '-'" "not a Kubernetes name" "$FIX/mps-h100" --for k8s-dra --name a-.b
usage_error "one device file for 4 GPUs per node" "names 1 file for 4 GPUs per node" "$FIX/mps-h100" --for slurm \
	--gpus-per-node 4 --device-file /dev/nvidia0
run plan "$FIX/mps-h100" --for slurm --gpus-per-node 3 --device-file '/dev/nvidia[0,2-3]'
check "three device files for 3 GPUs per node: exit 0, written as given (got $rc)" \
	bash -c "[[ $rc -eq 0 ]] && grep -q 'File=/dev/nvidia\[0,2-3\]' '$tmp/out'"
# The device-file expression has one strict reader: what it cannot count
# exactly is refused, never written into gres.conf as given.
usage_error "an index past int64" "is not a number of 1 to 4 digits" "$FIX/mps-h100" --for slurm \
	--device-file '/dev/nvidia[0-9223372036854775807]'
usage_error "a range that ends before it starts" "ends before it starts" "$FIX/mps-h100" --for slurm \
	--gpus-per-node 2 --device-file '/dev/nvidia[1-0]'
usage_error "an unclosed '['" "without its ']'" "$FIX/mps-h100" --for slurm --gpus-per-node 4 --device-file '/dev/nvidia[0-3'
usage_error "text after ']'" "text after a ']'" "$FIX/mps-h100" --for slurm --gpus-per-node 4 --device-file '/dev/nvidia[0-3]x'
usage_error "a file named twice" "names a file twice" "$FIX/mps-h100" --for slurm --gpus-per-node 2 \
	--device-file '/dev/nvidia0,/dev/nvidia[0]'
usage_error "a signed index" "without sign" "$FIX/mps-h100" --for slurm --gpus-per-node 2 --device-file '/dev/nvidia[-1-0]'
usage_error "a relative path" "absolute device paths" "$FIX/mps-h100" --for slurm --device-file 'nvidia0'
# Several files are written all or nothing: a link planted as job.sh is
# refused before gres.conf and slurm.conf are replaced.
mkdir "$tmp/partial"
echo old >"$tmp/partial/gres.conf"
echo old >"$tmp/partial/slurm.conf"
ln -s /nonexistent "$tmp/partial/job.sh"
run plan "$FIX/mps-h100" --for slurm --out "$tmp/partial"
check "--out DIR with a symbolic link as job.sh: exit 11, naming it (got $rc: $(cat "$tmp/err"))" \
	bash -c "[[ $rc -eq 11 ]] && grep -q \"job.sh' is a symbolic link\" '$tmp/err'"
check "  and gres.conf and slurm.conf are untouched, no temporary file left" \
	bash -c "[[ \$(cat '$tmp/partial/gres.conf') == old && \$(cat '$tmp/partial/slurm.conf') == old ]] &&
		[[ \$(ls -A '$tmp/partial' | wc -l) -eq 3 ]]"
echo "== slurm as applied"
run plan "$FIX/mps-h100" --for slurm --nodes 'gpu-node-[01-04]' --gpus-per-node 4 --out "$tmp/mps4"
check "4 GPUs sharing gres/mps: Flags=all_sharing on the mps line (Slurm's default puts every job on one GPU)" \
	grep -qx 'NodeName=gpu-node-\[01-04\] Name=mps Count=400 File=/dev/nvidia\[0-3\] Flags=all_sharing' "$tmp/mps4/gres.conf"
check "slurm.conf never holds a NodeName line (a second one per node: Duplicated NodeHostName)" \
	bash -c "! grep -q '^NodeName' '$tmp/mps4/slurm.conf'"
check "slurm.conf: Prolog=/Epilog= for the hooks, PrologFlags=Alloc" \
	bash -c "grep -qx 'Prolog=/etc/slurm/gpushare-prolog.sh' '$tmp/mps4/slurm.conf' &&
		grep -qx 'Epilog=/etc/slurm/gpushare-epilog.sh' '$tmp/mps4/slurm.conf' && grep -qx 'PrologFlags=Alloc' '$tmp/mps4/slurm.conf'"
check "the hooks: executable, running gpushare slurm prolog|epilog" \
	bash -c "[[ -x '$tmp/mps4/gpushare-prolog.sh' && -x '$tmp/mps4/gpushare-epilog.sh' ]] &&
		grep -qx 'exec /usr/local/bin/gpushare slurm prolog' '$tmp/mps4/gpushare-prolog.sh' &&
		grep -qx 'exec /usr/local/bin/gpushare slurm epilog' '$tmp/mps4/gpushare-epilog.sh' && sh -n '$tmp/mps4/gpushare-prolog.sh'"
# mps-split at 4 workers measured 25% each: 25 units per worker, 100 a job of 4.
check "job-mps.sh: the gres/mps way, 4 workers at the measured 25 units each" \
	bash -c "grep -qx '#SBATCH --gres=mps:100' '$tmp/mps4/job-mps.sh' && grep -q 'Each worker gets 25 mps units' '$tmp/mps4/job-mps.sh' &&
		grep -q 'farm --dir \"\$d\" --slots 4 --strategy mps-split' '$tmp/mps4/job-mps.sh' && bash -n '$tmp/mps4/job-mps.sh'"
run plan "$FIX/mps-h100" --for slurm --gpus-per-node 4 --hook-dir /opt/hooks --gpushare-path /opt/gs/bin/gpushare
check "--hook-dir and --gpushare-path reach slurm.conf and the hooks" \
	bash -c "grep -qx 'Prolog=/opt/hooks/gpushare-prolog.sh' '$tmp/out' && grep -qx 'exec /opt/gs/bin/gpushare slurm epilog' '$tmp/out'"
usage_error "a --gpushare-path a shell would split" "would need quoting" "$FIX/mps-h100" --for slurm --gpushare-path '/opt/g s'
run plan "$FIX/timeslice-a100" --for slurm --gpus-per-node 2 --out "$tmp/shard2"
check "2 GPUs sharing gres/shard: Flags=all_sharing; no hooks for shards" \
	bash -c "grep -q 'Name=shard Count=16 .*Flags=all_sharing\$' '$tmp/shard2/gres.conf' && [[ ! -e '$tmp/shard2/gpushare-prolog.sh' ]] &&
		! grep -q '^Prolog=' '$tmp/shard2/slurm.conf'"
cat >"$tmp/site.conf" <<'EOF'
ClusterName=cluster
SlurmctldHost=head
GresTypes=gpu
# the site's own comment
NodeName=gpu-node-[01-04] CPUs=64 RealMemory=512000 Gres=gpu:4 State=UNKNOWN
PartitionName=gpu Nodes=gpu-node-[01-04] Default=YES State=UP
EOF
run plan "$FIX/mps-h100" --for slurm --nodes 'gpu-node-[01-04]' --gpus-per-node 4 --slurm-conf "$tmp/site.conf" --out "$tmp/merged"
check "--slurm-conf: exit 0, slurm.conf and slurm.conf.diff written (got $rc: $(cat "$tmp/err"))" \
	bash -c "[[ $rc -eq 0 && -s '$tmp/merged/slurm.conf' && -s '$tmp/merged/slurm.conf.diff' ]]"
check "  the node's one NodeName line gets the Gres=, its other words kept" \
	bash -c "[[ \$(grep -c '^NodeName=' '$tmp/merged/slurm.conf') -eq 1 ]] &&
		grep -qx 'NodeName=gpu-node-\[01-04\] CPUs=64 RealMemory=512000 Gres=gpu:h100:4,mps:400 State=UNKNOWN' '$tmp/merged/slurm.conf'"
check "  GresTypes merged, the hooks added, the site's lines kept" \
	bash -c "grep -qx 'GresTypes=gpu,mps' '$tmp/merged/slurm.conf' && grep -qx 'Prolog=/etc/slurm/gpushare-prolog.sh' '$tmp/merged/slurm.conf' &&
		grep -qx '# the site.s own comment' '$tmp/merged/slurm.conf' && grep -qx 'ClusterName=cluster' '$tmp/merged/slurm.conf'"
cp "$tmp/site.conf" "$tmp/site-patched.conf"
check "  the diff turns the site's file into the merged one (patch)" \
	bash -c "patch -s '$tmp/site-patched.conf' <'$tmp/merged/slurm.conf.diff' && cmp -s '$tmp/site-patched.conf' '$tmp/merged/slurm.conf'"
printf 'NodeName=n1 CPUs=4\nNodeName=n1 Gres=gpu:1\n' >"$tmp/dup.conf"
usage_error "--slurm-conf with the node twice" "Duplicated NodeHostName" "$FIX/mps-h100" --for slurm --nodes n1 --slurm-conf "$tmp/dup.conf"
printf 'NodeName=n2 CPUs=4\n' >"$tmp/none.conf"
usage_error "--slurm-conf without the node" "has no line NodeName=n1" "$FIX/mps-h100" --for slurm --nodes n1 --slurm-conf "$tmp/none.conf"
printf 'Prolog=/etc/slurm/site-prolog\nNodeName=n1 CPUs=4\n' >"$tmp/prolog.conf"
usage_error "--slurm-conf with a Prolog of its own" "has its own Prolog=/etc/slurm/site-prolog" "$FIX/mps-h100" --for slurm \
	--nodes n1 --slurm-conf "$tmp/prolog.conf"
# Include lines (Slurm's src/common/parse_config.c, _parse_include_directive:
# a relative name from the including file's directory): kept as they are;
# the files they name may set nothing the merge writes.
mkdir -p "$tmp/inc/conf.d"
printf '%s\n' 'ClusterName=c' 'include conf.d/parts.conf' 'NodeName=n1 CPUs=4' >"$tmp/inc/slurm.conf"
printf '%s\n' 'PartitionName=p Nodes=n1 Default=YES' >"$tmp/inc/conf.d/parts.conf"
run plan "$FIX/mps-h100" --for slurm --nodes n1 --slurm-conf "$tmp/inc/slurm.conf" --out "$tmp/inc-merged"
check "--slurm-conf with an Include of other lines: merged, the Include line kept (got $rc: $(cat "$tmp/err"))" \
	bash -c "[[ $rc -eq 0 ]] && grep -qx 'include conf.d/parts.conf' '$tmp/inc-merged/slurm.conf' &&
		grep -qx 'NodeName=n1 CPUs=4 Gres=gpu:h100:1,mps:100' '$tmp/inc-merged/slurm.conf'"
printf '%s\n' 'ClusterName=c' 'Include conf.d/nodes.conf' >"$tmp/inc/nodes.conf"
printf '%s\n' 'include parts.conf' 'NodeName=n1 CPUs=4' >"$tmp/inc/conf.d/nodes.conf"
usage_error "--slurm-conf whose node line is in an included file" \
	"line 2: Include 'conf.d/nodes.conf' sets NodeName= (\"NodeName=n1 CPUs=4\"), which the merge writes into" \
	"$FIX/mps-h100" --for slurm --nodes n1 --slurm-conf "$tmp/inc/nodes.conf"
printf '%s\n' 'NodeName=n1 CPUs=4' 'Include conf.d/loop.conf' >"$tmp/inc/loop.conf"
printf '%s\n' 'Include ../loop.conf' >"$tmp/inc/conf.d/loop.conf"
usage_error "--slurm-conf with an Include loop" "is a loop" "$FIX/mps-h100" --for slurm --nodes n1 --slurm-conf "$tmp/inc/loop.conf"
printf '%s\n' 'NodeName=n1 CPUs=4' 'Include conf.d/none.conf' >"$tmp/inc/missing.conf"
usage_error "--slurm-conf with an Include of a missing file" "line 2: Include 'conf.d/none.conf': '$tmp/inc/conf.d/none.conf': No such file" \
	"$FIX/mps-h100" --for slurm --nodes n1 --slurm-conf "$tmp/inc/missing.conf"

mkdir -p "$tmp/real-dir"
ln -s "$tmp/real-dir" "$tmp/link-dir"
run plan "$FIX/mps-h100" --for slurm --out "$tmp/link-dir"
check "--out DIR that is a symbolic link: exit 11, nothing written through it (got $rc)" \
	bash -c "[[ $rc -eq 11 ]] && [[ -z \$(ls '$tmp/real-dir') ]]"
usage_error "a pipe dir that needs quoting" "would need quoting" "$FIX/mps-h100" --for env --mps-pipe-dir '/tmp/a b'
usage_error "an unknown shape" "no workload shape 'x'" "$FIX/mps-h100" --for env --shape x
cat "$FIX/mps-h100/results.jsonl" "$FIX/timeslice-a100/results.jsonl" >"$tmp/results.jsonl"
usage_error "two shapes without --shape" "choose one with --shape" "$tmp" --for env
check "two shapes without --shape: the hint is the faster one (tiny, not the file's first)" \
	grep -qF "(the highest throughput: --shape 'tiny' --batch 1, 121k items/s)" "$tmp/err"
run plan "$tmp" --for env --shape tiny
check "two shapes, --shape tiny: exit 0, timeslice at 8 (fewer workers give less, t test) (got $rc)" \
	bash -c "test $rc -eq 0 && grep -q 'tiny, batch 1: timeslice with 8 workers' '$tmp/out'"
check "  the GPU line is that shape's runs' GPU, not the first record's" \
	grep -q "^# GPU: NVIDIA A100-SXM4-40GB, driver .*, host a100-07" "$tmp/out"
mkdir -p "$tmp/two-models"
python3 - "$FIX/timeslice-a100/results.jsonl" "$tmp/two-models/results.jsonl" <<'EOF'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
with open(sys.argv[2], "w") as out:
    for r in recs:
        out.write(json.dumps(r) + "\n")
    for r in recs:   # the same cells again, other repeats, on another model
        r["repeat"] += 100
        r["metadata"]["gpu"]["name"] = "NVIDIA H200"
        out.write(json.dumps(r) + "\n")
EOF
run plan "$tmp/two-models" --for env
check "one shape measured on two GPU models: refused (exit 14), naming both" \
	bash -c "[[ $rc -eq 14 ]] && grep -q \"more than one GPU model ('NVIDIA A100-SXM4-40GB' and 'NVIDIA H200')\" '$tmp/err'"
run plan "$tmp/none" --for env
check "a directory without results: exit 11 (got $rc)" test "$rc" -eq 11

echo "== a measured memory no GPU holds sets no limit, and says so"
for v in 1e30 2e19 1e17; do
	mkdir -p "$tmp/mem$v"
	sed -E "s/\"mem_used_max_bytes\":[0-9]+/\"mem_used_max_bytes\":$v/g" "$FIX/mps-h100/results.jsonl" \
		>"$tmp/mem$v/results.jsonl"
	run plan "$tmp/mem$v" --for env --gpu-model H100
	check "memory $v bytes: exit 0 (got $rc), no limit written, a warning" bash -c "[[ $rc -eq 0 ]] &&
! grep -q MEM_LIMIT '$tmp/out' && grep -q 'more than any GPU has' '$tmp/err'"
done
run plan "$tmp/mem1e17" --for env --gpu-model H100 --mem-per-client 10G
check "  --mem-per-client still gives one" grep -q "^CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=10240M$" "$tmp/out"

finish plan
