#!/usr/bin/env bash
# The Kubernetes objects `gpushare plan` writes, validated against the real
# schemas: every --for k8s-device-plugin and --for k8s-dra output of the
# committed fixtures (and of the golden files) goes through
# tests/k8s/validate.mjs: kubernetes-models (the API's OpenAPI schemas,
# resource.k8s.io included) with unknown fields refused, the NVIDIA DRA
# driver's GpuConfig rules and the device plugin's config rules mirrored
# there. The validator is shown to catch what it must (a mutated document
# fails). Needs node and tests/k8s/node_modules (scripts/setup.sh --test).
set -euo pipefail
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${GPUSHARE:?set by ctest}" "${GPUSHARE_SOURCE_DIR:?set by ctest}"
SRC=$GPUSHARE_SOURCE_DIR
FIX=$SRC/tests/plan
V=$SRC/tests/k8s/validate.mjs
tmp=$(mktemp -d /tmp/gpushare-plan-k8s-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

if ! command -v node >/dev/null; then
	missing_tool "Kubernetes schema validation: node not installed (Debian package nodejs)"
	finish plan-k8s
	exit 0
fi
if [[ ! -d $SRC/tests/k8s/node_modules/kubernetes-models ]]; then
	missing_tool "Kubernetes schema validation: tests/k8s/node_modules missing (scripts/setup.sh --test runs npm ci there)"
	finish plan-k8s
	exit 0
fi

# The validator's checks are queued and run by one node process at the end
# of each section (verdicts): a node start with the schemas loaded takes
# about a second, beside a CPU hog several, and the sections check some 75
# files. A queued file stays as it is until then (each has its own name).
q_kind=() q_what=() q_pattern=() q_args=()
valid() { # valid WHAT [--k8s-only] FILE...: the validator accepts each FILE
	q_kind+=(valid) q_what+=("$1") q_pattern+=("")
	q_args+=("$(IFS=$'\t'; echo "${*:2}")")
}
invalid() { # invalid WHAT PATTERN [--k8s-only] FILE: the validator refuses FILE naming PATTERN
	q_kind+=(invalid) q_what+=("$1") q_pattern+=("$2")
	q_args+=("$(IFS=$'\t'; echo "${*:3}")")
}
verdicts() { # run the queued checks
	local i v
	((${#q_kind[@]})) || return 0
	printf '%s\n' "${q_args[@]}" >"$tmp/batch"
	if ! node "$V" --batch "$tmp/batch" >"$tmp/v.out" 2>&1; then
		fail "the validator itself failed: $(cat "$tmp/v.out")"
	else
		for i in "${!q_kind[@]}"; do
			v=$(grep -m1 "^group $((i + 1)): " "$tmp/v.out" | cut -d' ' -f3-)
			case ${q_kind[i]}:$v in
			valid:ok:*) ok "${q_what[i]}: valid (${v#ok: })" ;;
			valid:*) fail "${q_what[i]}: ${v:-no verdict}" ;;
			invalid:ok:*) fail "${q_what[i]}: the validator accepted it" ;;
			invalid:FAIL:*) if [[ $v == *"${q_pattern[i]}"* ]]; then
				ok "${q_what[i]}: refused ($v)"
			else
				fail "${q_what[i]}: refused for another reason: $v"
			fi ;;
			*) fail "${q_what[i]}: no verdict: $(cat "$tmp/v.out")" ;;
			esac
		done
	fi
	q_kind=() q_what=() q_pattern=() q_args=()
}

echo "== every Kubernetes output of the fixtures"
n=0
for fx in mps-h100 timeslice-a100; do
	for target in k8s-device-plugin k8s-dra; do
		for extra in "" "--strategy mps" "--strategy mps-split" "--strategy timeslice" "--mem-per-client 10G" \
			"--goal slo --slo-p99 2ms"; do
			# shellcheck disable=SC2086 # split on purpose
			if "$GPUSHARE" plan "$FIX/$fx" --for "$target" $extra >"$tmp/o$n.yaml" 2>"$tmp/err"; then
				valid "$fx --for $target $extra: stdout, Kubernetes objects only" --k8s-only "$tmp/o$n.yaml"
				# shellcheck disable=SC2086 # split on purpose
				"$GPUSHARE" plan "$FIX/$fx" --for "$target" $extra --out "$tmp/o$n" 2>/dev/null
				valid "$fx --for $target $extra --out DIR: $(cd "$tmp/o$n" && echo *)" "$tmp/o$n"/*.yaml
				n=$((n + 1))
			else
				echo "   ($fx --for $target $extra: not planned: $(tail -1 "$tmp/err"))"
			fi
		done
	done
done
check "at least 12 outputs validated ($n)" test "$n" -ge 12
for g in "$FIX"/golden/*.yaml; do
	valid "golden $(basename "$g")" "$g"
done
verdicts
"$GPUSHARE" plan "$FIX/mps-h100" --for k8s-dra >"$tmp/dra.yaml"
check "the DRA claim is resource.k8s.io/v1 with the driver's GpuConfig, MPS, 25%" \
	bash -c "grep -q 'apiVersion: resource.k8s.io/v1$' '$tmp/dra.yaml' && grep -q 'kind: GpuConfig' '$tmp/dra.yaml' &&
		grep -q 'strategy: MPS' '$tmp/dra.yaml' && grep -q 'defaultActiveThreadPercentage: 25$' '$tmp/dra.yaml'"

echo "== the device plugin as applied"
"$GPUSHARE" plan "$FIX/mps-h100" --for k8s-device-plugin --strategy mps >"$tmp/dp-mps.yaml"
check "stdout: one document, the ConfigMap, in the chart's namespace" \
	bash -c "[[ \$(grep -c '^kind:' '$tmp/dp-mps.yaml') == 1 ]] && grep -q '^kind: ConfigMap' '$tmp/dp-mps.yaml' &&
		grep -qx '  namespace: nvidia-device-plugin' '$tmp/dp-mps.yaml'"
check "MPS: the header says GPU Feature Discovery must label the nodes" grep -q 'nvidia.com/mps.capable=true' "$tmp/dp-mps.yaml"
rm -rf "$tmp/dp"
"$GPUSHARE" plan "$FIX/mps-h100" --for k8s-device-plugin --strategy mps --namespace gpu-sharing --out "$tmp/dp"
check "--out DIR: config.yaml, configmap.yaml, values.yaml" test -s "$tmp/dp/config.yaml" -a -s "$tmp/dp/configmap.yaml" -a -s "$tmp/dp/values.yaml"
check "--namespace: the ConfigMap's" grep -qx '  namespace: gpu-sharing' "$tmp/dp/configmap.yaml"
check "values.yaml names the ConfigMap and turns on GPU Feature Discovery" \
	bash -c "grep -qx '  name: gpushare-mps-4' '$tmp/dp/values.yaml' && grep -qx '  enabled: true' '$tmp/dp/values.yaml'"
valid "--out DIR: every file" "$tmp"/dp/*.yaml
for ns in default Bad_NS; do
	"$GPUSHARE" plan "$FIX/mps-h100" --for k8s-device-plugin --namespace "$ns" >/dev/null 2>"$tmp/err" && rc=0 || rc=$?
	check "--namespace $ns: refused, exit 2 (got $rc: $(cat "$tmp/err"))" test "$rc" -eq 2
done
# More than 48 MPS clients: the plugin's MPS daemon refuses the replicas.
mkdir -p "$tmp/w49"
grep -E '\|(mps|timeslice)\|w7\|' "$FIX/mps-h100/results.jsonl" |
	sed 's/|w7|/|w49|/; s/"workers":7,/"workers":49,/' >"$tmp/w49/results.jsonl"
for target in k8s-device-plugin k8s-dra; do
	"$GPUSHARE" plan "$tmp/w49" --for "$target" --strategy mps >"$tmp/o.yaml" 2>"$tmp/err" && rc=0 || rc=$?
	check "49 MPS workers --for $target: refused, exit 14, naming the limit (got $rc: $(tail -1 "$tmp/err"))" \
		bash -c "[[ $rc == 14 ]] && grep -q 'at most 48 clients' '$tmp/err'"
done
"$GPUSHARE" plan "$FIX/mps-h100" --for k8s-device-plugin --strategy mps --mem-per-client 10G >/dev/null 2>"$tmp/err"
check "--mem-per-client: warned, with what the plugin does instead" grep -q "memory / 4; for 10Gi, plan --for k8s-dra" "$tmp/err"

"$GPUSHARE" plan "$FIX/timeslice-a100" --for k8s-device-plugin --mem-per-client 10G >"$tmp/o.yaml" 2>"$tmp/err"
check "--mem-per-client with time-slicing: warned, not dropped in silence" \
	bash -c "grep -q 'mem-per-client is a limit of MPS clients: timeslice shares without one' '$tmp/err' &&
		grep -q '^# Warning: --mem-per-client' '$tmp/o.yaml'"

verdicts

echo "== the DRA driver as applied"
rm -rf "$tmp/dra"
"$GPUSHARE" plan "$FIX/mps-h100" --for k8s-dra --out "$tmp/dra"
check "the header names the feature gate and the minimum versions" \
	bash -c "grep -q 'MPSSupport feature gate' '$tmp/dra/resourceclaimtemplate.yaml' &&
		grep -q 'Kubernetes 1.34 or later' '$tmp/dra/resourceclaimtemplate.yaml' &&
		grep -q 'DRA driver for GPUs 25.8' '$tmp/dra/resourceclaimtemplate.yaml'"
check "values.yaml turns the gate and GPU resources on" \
	bash -c "grep -qx '  MPSSupport: true' '$tmp/dra/values.yaml' && grep -qx 'gpuResourcesEnabledOverride: true' '$tmp/dra/values.yaml'"
check "a selector for the measured GPU model" \
	grep -q 'productName == "NVIDIA H100 80GB HBM3"' "$tmp/dra/resourceclaimtemplate.yaml"
check "an example pod of 4 containers naming the claim" \
	bash -c "grep -q '^kind: Pod' '$tmp/dra/resourceclaimtemplate.yaml' &&
		[[ \$(grep -c '^  - name: worker-' '$tmp/dra/resourceclaimtemplate.yaml') == 4 ]] &&
		grep -q 'resourceClaimTemplateName: gpushare-mps-split-4' '$tmp/dra/resourceclaimtemplate.yaml'"
check "shared-claim.yaml: one ResourceClaim named by 4 pods" \
	bash -c "grep -q '^kind: ResourceClaim$' '$tmp/dra/shared-claim.yaml' &&
		[[ \$(grep -c 'resourceClaimName: gpushare-mps-split-4$' '$tmp/dra/shared-claim.yaml') == 4 ]]"
valid "--for k8s-dra --out DIR: every file" "$tmp"/dra/*.yaml
"$GPUSHARE" plan "$FIX/timeslice-a100" --for k8s-dra >"$tmp/dra-ts.yaml"
check "time-slicing names its own gate" grep -q 'TimeSlicingSettings feature gate' "$tmp/dra-ts.yaml"
"$GPUSHARE" plan "$FIX/mps-h100" --for k8s-dra --mem-per-client 100K >/dev/null 2>"$tmp/err" && rc=0 || rc=$?
check "--mem-per-client 100K: refused, exit 14, the driver's 1Mi (got $rc: $(tail -1 "$tmp/err"))" \
	bash -c "[[ $rc == 14 ]] && grep -q 'under 1Mi' '$tmp/err'"

verdicts

echo "== mig-parted as applied"
"$GPUSHARE" plan "$FIX/mps-h100" --for mig-parted >"$tmp/mig.yaml"
check "a device-filter for the measured model (H100 80GB)" grep -q 'device-filter: \["0x233010DE", "0x233110DE"\]' "$tmp/mig.yaml"
valid "the mig-parted config" "$tmp/mig.yaml"
mkdir -p "$tmp/m3g"
sed 's/MIG 1g.10gb/MIG 3g.40gb/g' "$FIX/mps-h100/results.jsonl" >"$tmp/m3g/results.jsonl"
"$GPUSHARE" plan "$tmp/m3g" --for mig-parted >/dev/null 2>"$tmp/err" && rc=0 || rc=$?
check "3g.40gb x7: refused, exit 14, cannot be placed (got $rc: $(tail -1 "$tmp/err"))" \
	bash -c "[[ $rc == 14 ]] && grep -q '3g.40gb x7 cannot be placed on one H100 80GB' '$tmp/err'"
sed 's/"1g.10gb": 7/"3g.40gb": 4/' "$tmp/mig.yaml" >"$tmp/mig-bad.yaml"
invalid "3g.40gb x4 on an H100" "cannot be placed" "$tmp/mig-bad.yaml"
sed 's/"1g.10gb": 7/"1g.10gb": 2\n      "2g.20gb": 1\n      "3g.40gb": 1/' "$tmp/mig.yaml" >"$tmp/mig-mixed.yaml"
valid "the mixed layout 1g.10gb x2 + 2g.20gb + 3g.40gb fits" "$tmp/mig-mixed.yaml"
"$GPUSHARE" plan "$FIX/mig-mixed" --for mig-parted >"$tmp/mig-measured.yaml" 2>"$tmp/err" && rc=0 || rc=$?
check "plan of mixed MIG runs (1g.10gb x2 + 2g.20gb + 3g.40gb): exit 0 (got $rc: $(tail -1 "$tmp/err"))" test "$rc" -eq 0
check "  every profile with its count, as measured" \
	bash -c "grep -qx '      \"1g.10gb\": 2' '$tmp/mig-measured.yaml' && grep -qx '      \"2g.20gb\": 1' '$tmp/mig-measured.yaml' &&
		grep -qx '      \"3g.40gb\": 1' '$tmp/mig-measured.yaml'"
valid "the mixed layout plan writes from its runs" "$tmp/mig-measured.yaml"
grep -v 'device-filter' "$tmp/mig.yaml" | sed 's/^    devices: all/  - devices: all/' >"$tmp/mig-nofilter.yaml"
invalid "no device-filter" "no device-filter" "$tmp/mig-nofilter.yaml"

verdicts

echo "== names YAML would read as another type stay strings"
for name in true null 1e3 0x10 yes; do
	"$GPUSHARE" plan "$FIX/timeslice-a100" --for k8s-device-plugin --name "$name" >"$tmp/n-$name.yaml"
	check "--name $name is written quoted" grep -qx "  name: \"$name\"" "$tmp/n-$name.yaml"
	valid "--name $name" "$tmp/n-$name.yaml"
done
verdicts

echo "== names with characters YAML readers refuse anywhere in a stream"
# A C1 control (U+0080..U+009F but U+0085) or U+FFFE/U+FFFF in a recorded
# name (host, GPU, command line) once made every YAML output unreadable to
# libyaml, go-yaml and PyYAML, though it sat in a comment.
mkdir -p "$tmp/c1"
sed 's/gpu-node-01/gpu\\u0080node\\uffff/; s/NVIDIA H100 80GB HBM3/NVIDIA H100 80GB HBM3\\u009f\\ufffe/;
	s/"--repeats"/"--re\\u0099peats"/' "$FIX/mps-h100/results.jsonl" >"$tmp/c1/results.jsonl"
if python3 -c 'import yaml' 2>/dev/null; then
	for target in k8s-device-plugin k8s-dra mig-parted; do
		"$GPUSHARE" plan "$tmp/c1" --for "$target" >"$tmp/c1.yaml"
		check "--for $target: PyYAML reads every document" \
			python3 -c 'import sys, yaml; list(yaml.safe_load_all(open(sys.argv[1], encoding="utf-8")))' "$tmp/c1.yaml"
		if python3 -c 'import yaml; yaml.CSafeLoader' 2>/dev/null; then
			check "--for $target: libyaml reads every document" \
				python3 -c 'import sys, yaml; list(yaml.load_all(open(sys.argv[1], encoding="utf-8"), Loader=yaml.CSafeLoader))' "$tmp/c1.yaml"
		fi
	done
else
	missing_tool "reading YAML back with PyYAML: python3-yaml not installed"
fi

echo "== the validator catches what it must"
sed 's/exactly:/exact:/' "$tmp/dra.yaml" >"$tmp/bad1.yaml"
invalid "an unknown field of the API" "not a field of DeviceRequest" "$tmp/bad1.yaml"
sed 's/deviceClassName: gpu.nvidia.com/deviceClassName: 5/' "$tmp/dra.yaml" >"$tmp/bad2.yaml"
invalid "a number where the schema wants a string" "must be string" "$tmp/bad2.yaml"
sed 's/defaultActiveThreadPercentage: 25/defaultActiveThreadPercentage: 0/' "$tmp/dra.yaml" >"$tmp/bad3.yaml"
invalid "a thread percentage of 0" "not a whole number 1..100" "$tmp/bad3.yaml"
sed 's/defaultPinnedDeviceMemoryLimit: .*/defaultPinnedDeviceMemoryLimit: "ten gigs"/' "$tmp/dra.yaml" >"$tmp/bad4.yaml"
invalid "a memory limit that is not a quantity" "not a positive quantity" "$tmp/bad4.yaml"
sed -e 's/strategy: MPS/strategy: TimeSlicing/' -e '1a # TimeSlicingSettings' "$tmp/dra.yaml" >"$tmp/bad5.yaml"
invalid "strategy and config of different kinds" "mpsConfig with strategy TimeSlicing" "$tmp/bad5.yaml"
"$GPUSHARE" plan "$FIX/timeslice-a100" --for k8s-device-plugin >"$tmp/dp.yaml"
sed -E 's/replicas: ([0-9]+)/replicas: "\1"/' "$tmp/dp.yaml" >"$tmp/bad6.yaml"
invalid "replicas as a string" "is not a whole number >= 2" "$tmp/bad6.yaml"
sed 's/^kind: ConfigMap/kind: ConfigMapp/' "$tmp/dp.yaml" >"$tmp/bad7.yaml"
invalid "an unknown kind" "no ConfigMapp" "$tmp/bad7.yaml"
# The consumers' own rules (each cited in tests/k8s/validate.mjs).
sed -E 's/replicas: [0-9]+/replicas: 49/' "$tmp/dp-mps.yaml" >"$tmp/bad8.yaml"
invalid "49 MPS replicas" "over 48" "$tmp/bad8.yaml"
sed 's/defaultPinnedDeviceMemoryLimit: .*/defaultPinnedDeviceMemoryLimit: "100Ki"/' "$tmp/dra.yaml" >"$tmp/bad9.yaml"
invalid "a 100Ki memory limit" "under 1Mi" "$tmp/bad9.yaml"
sed 's/MPSSupport/a gate/g' "$tmp/dra.yaml" >"$tmp/bad10.yaml"
invalid "an MPS claim whose file names no MPSSupport gate" "MPSSupport feature gate" "$tmp/bad10.yaml"
grep -v '^  namespace:' "$tmp/dp-mps.yaml" >"$tmp/bad11.yaml"
invalid "a ConfigMap without a namespace" "names no namespace" "$tmp/bad11.yaml"
{ cat "$tmp/dp/config.yaml"; echo ---; cat "$tmp/dp/configmap.yaml"; } >"$tmp/bad12.yaml"
invalid "a stream whose first document is the plugin's config file" "not a Kubernetes object" --k8s-only "$tmp/bad12.yaml"
verdicts

finish plan-k8s
