#!/usr/bin/env bash
# The scale-out fixtures work: a private Slurm with two fake GPUs runs a
# 2-task batch job and a 3-element array with the documented variables, and
# Open MPI starts 3 ranks; under both launchers the print_binding helper
# finds the node-local rank and count and binds to the GPUs of the stand-in
# NVML as lib/exec/launcher.c's rules say.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_slurm.sh"
. "$(dirname "$0")/lib_mpi.sh"

tmp=$(mktemp -d)
trap 'slurm_stop; rm -rf "$tmp"' EXIT
H=$GPUSHARE_TEST_HELPERS
export GPUSHARE_NVML_LIBRARY=$H/libfakenvml.so FAKE_NVML_GPUS=2
uuid1=GPU-fa4e0000-0000-4000-8000-000000000001
VARS='SLURM_(PROCID|NTASKS|ARRAY_TASK_ID|LOCALID|JOB_ID)|CUDA_VISIBLE_DEVICES'

# value VAR FILE: the value of VAR=... in an env dump
value() { sed -n "s/^$1=//p" "$2"; }

echo "== Open MPI: 3 ranks on a 2-core machine"
if mpi_available; then
	cat >"$tmp/ranks.sh" <<'EOF'
#!/bin/sh
echo "$OMPI_COMM_WORLD_LOCAL_RANK $OMPI_COMM_WORLD_LOCAL_SIZE"
EOF
	chmod +x "$tmp/ranks.sh"
	mpi_run -np 3 "$tmp/ranks.sh" >"$tmp/mpi.out" 2>"$tmp/mpi.err" || true
	check "mpirun -np 3: local ranks 0 1 2 of 3" \
		test "$(sort "$tmp/mpi.out" | tr '\n' ' ')" = "0 3 1 3 2 3 "

	echo "== print_binding under mpirun"
	mpi_run -np 3 "$H/print_binding" --bind block >"$tmp/pb.out" 2>"$tmp/pb.err" || true
	sort -t= -k3 "$tmp/pb.out" >"$tmp/pb.sorted"
	check "three ranks, all seen as Open MPI ranks of 3" \
		test "$(grep -c 'launcher=openmpi .*local_size=3 job_key=ompi-' "$tmp/pb.out")" = 3
	check "block over 2 GPUs: ranks 0,1 on GPU 0 and rank 2 on GPU 1" \
		test "$(grep -o 'local_rank=[0-9] .* gpu=[0-9]' "$tmp/pb.out" | sed 's/local_rank=\([0-9]\).* gpu=/\1:/' |
			sort | tr '\n' ' ')" = "0:0 1:0 2:1 "
	check "one job key for all ranks" test "$(grep -o 'job_key=[^ ]*' "$tmp/pb.out" | sort -u | wc -l)" = 1
	check "uuids from the stand-in NVML" grep -q "uuid=$uuid1" "$tmp/pb.out"
	check "two ranks share a GPU: max_ranks_per_gpu=2" \
		test "$(grep -c 'max_ranks_per_gpu=2' "$tmp/pb.out")" = 3
	MPI_PASS=CUDA_VISIBLE_DEVICES CUDA_VISIBLE_DEVICES=1 mpi_run -np 2 "$H/print_binding" >"$tmp/pb.out" 2>&1 || true
	check "CUDA_VISIBLE_DEVICES=1: both ranks on GPU 1" \
		test "$(grep -c "gpus=1 gpu=1 uuid=$uuid1" "$tmp/pb.out")" = 2
	set +e
	mpi_run -np 3 "$H/print_binding" --ranks-per-gpu 2 >"$tmp/pb.out" 2>"$tmp/pb.err"
	rc=$?
	set -e
	check "3 ranks at --ranks-per-gpu 2 are refused" test "$rc" -ne 0
	check "  with the rule named" grep -q "not a multiple of --ranks-per-gpu 2" "$tmp/pb.err"
else
	missing_tool "Open MPI's mpirun not installed (Debian package openmpi-bin)"
fi

echo "== private Slurm with two fake GPUs"
slurm_needed "scale-out fixture"
if ! slurm_start 2; then
	fail "the private Slurm did not become idle"
	finish
fi
ok "slurm idle in $SLURM_DIR"
check "SLURM_CONF is the private one" test "$SLURM_CONF" = "$SLURM_DIR/slurm.conf"
D=$SLURM_DIR

echo "== a 2-task batch job"
cat >"$D/two.sbatch" <<EOF
#!/bin/bash
#SBATCH -n 2
#SBATCH --gres=gpu:2
#SBATCH -o $D/two.out
srun bash -c 'env | grep -E "$VARS" >$D/two-task-\$SLURM_PROCID.env'
# The batch script itself is no rank of a launcher:
"$H/print_binding" >$D/two-batch.pb 2>&1 || echo "rc=\$?" >>$D/two-batch.pb
srun "$H/print_binding" >$D/two-srun.pb 2>&1
"$H/print_binding" --shard >$D/two-batch.shard 2>&1
srun bash -c '"$H/print_binding" --shard >$D/two-step-\$SLURM_PROCID.shard 2>&1'
EOF
jid=$(sbatch --parsable "$D/two.sbatch")
check "job $jid completed" test "$(slurm_wait_job "$jid" 60)" = COMPLETED
for t in 0 1; do
	f=$D/two-task-$t.env
	check "task $t: SLURM_PROCID=$t, SLURM_LOCALID=$t, SLURM_NTASKS=2" \
		test "$(value SLURM_PROCID "$f") $(value SLURM_LOCALID "$f") $(value SLURM_NTASKS "$f")" = "$t $t 2"
	check "task $t: SLURM_JOB_ID=$jid" test "$(value SLURM_JOB_ID "$f")" = "$jid"
	check "task $t: CUDA_VISIBLE_DEVICES=0,1 (both fake GPUs)" test "$(value CUDA_VISIBLE_DEVICES "$f")" = 0,1
done
check "print_binding in the batch script: no launcher, exit 2" \
	grep -q "no launcher found" "$D/two-batch.pb"
check "  exit status 2" grep -q "rc=2" "$D/two-batch.pb"
check "print_binding under srun: two Slurm ranks of 2" \
	test "$(grep -c 'launcher=slurm .*local_size=2 ' "$D/two-srun.pb")" = 2
check "  round-robin: rank 0 on GPU 0, rank 1 on GPU 1" \
	test "$(grep -o 'local_rank=[0-9] .* gpu=[0-9]' "$D/two-srun.pb" | sed 's/local_rank=\([0-9]\).* gpu=/\1:/' |
		sort | tr '\n' ' ')" = "0:0 1:1 "
check "  job key slurm-$jid.<step>" test "$(grep -c "job_key=slurm-$jid\.[0-9]" "$D/two-srun.pb")" = 2
check "  one rank per GPU: max_ranks_per_gpu=1" test "$(grep -c 'max_ranks_per_gpu=1' "$D/two-srun.pb")" = 2
check "farm shard in the batch script of 2 tasks: all jobs (0/1)" grep -q "shard=0/1 from_env=0" "$D/two-batch.shard"
check "farm shard of step task 0 and 1: 0/2 and 1/2" \
	test "$(cat "$D/two-step-0.shard" "$D/two-step-1.shard" | tr '\n' ' ')" = "shard=0/2 from_env=1 shard=1/2 from_env=1 "

echo "== a 3-element array, one fake GPU each"
cat >"$D/array.sbatch" <<EOF
#!/bin/bash
#SBATCH --array=0-2
#SBATCH --gres=gpu:1
#SBATCH -o $D/array-%a.out
env | grep -E "$VARS" >$D/array-\$SLURM_ARRAY_TASK_ID.env
"$H/print_binding" --shard >$D/array-\$SLURM_ARRAY_TASK_ID.shard 2>&1
EOF
ajid=$(sbatch --parsable "$D/array.sbatch")
for a in 0 1 2; do
	check "element $a completed" test "$(slurm_wait_job "${ajid}_$a" 60)" = COMPLETED
	f=$D/array-$a.env
	check "element $a: SLURM_ARRAY_TASK_ID=$a" test "$(value SLURM_ARRAY_TASK_ID "$f")" = "$a"
	check "element $a: one GPU in CUDA_VISIBLE_DEVICES" grep -Eq '^CUDA_VISIBLE_DEVICES=[01]$' "$f"
	check "element $a: farm shard $a/3" grep -q "shard=$a/3 from_env=1" "$D/array-$a.shard"
done

echo "== srun: 3 ranks on the node's one allowed GPU, block binding"
srun -n 3 --gres=gpu:1 "$H/print_binding" --bind block >"$tmp/s3.out" 2>&1 || true
check "three Slurm ranks of 3 on one GPU" \
	test "$(grep -c 'launcher=slurm .*local_size=3 .*gpus=1 .*ranks_on_gpu=3' "$tmp/s3.out")" = 3

echo "== examples/slurm/farm.sbatch: one task per node, each its shard, resumed on resubmission"
EX=$GPUSHARE_SOURCE_DIR/examples/slurm
# A stand-in for gpushare that records how it was called and makes the
# shard directory look like a farm's, so that a second run resumes.
cat >"$D/fake-gpushare" <<'EOF'
#!/bin/bash
out=$FAKE_OUT/call-${SLURM_ARRAY_TASK_ID:-x}-${SLURM_PROCID:-x}-$$
{ echo "args=$*"; env | grep -E '^(SLURM_(PROCID|NTASKS|STEP_ID|ARRAY_TASK_ID)|CUDA_VISIBLE_DEVICES)='; } >"$out"
while (($#)); do
	case $1 in --dir | --resume) mkdir -p "$2" && touch "$2/journal.jsonl"; shift ;; esac
	shift
done
EOF
chmod +x "$D/fake-gpushare"
printf 'true\n' >"$D/jobs.txt"
mkdir "$D/calls1" "$D/calls2" "$D/calls3"
submit_farm() { # OUTDIR SBATCH-ARGS...
	local out=$1
	shift
	(cd "$D" && FAKE_OUT=$out GPUSHARE=$D/fake-gpushare sbatch --parsable -o "$out/job.out" "$@")
}
jid=$(submit_farm "$D/calls1" -N1 -n2 --ntasks-per-node=2 --gres=gpu:2 --cpus-per-task=1 \
	"$EX/farm.sbatch" "$D/jobs.txt" "$D/farm")
check "farm.sbatch job $jid completed" test "$(slurm_wait_job "$jid" 60)" = COMPLETED
check "two tasks started gpushare farm" test "$(cat "$D"/calls1/call-x-* | grep -c '^args=farm --dir')" = 2
for t in 0 1; do
	check "task $t: its own shard directory" \
		grep -q "args=farm --dir $D/farm/shard-$t --strategy mps $D/jobs.txt" "$D"/calls1/call-x-"$t"-*
	f=$(ls "$D"/calls1/call-x-"$t"-*)
	check "  SLURM_NTASKS=2, SLURM_STEP_ID set, both GPUs" \
		test "$(value SLURM_NTASKS "$f") $(value SLURM_STEP_ID "$f" | grep -c .) $(value CUDA_VISIBLE_DEVICES "$f")" = "2 1 0,1"
done
jid=$(submit_farm "$D/calls2" -N1 -n2 --ntasks-per-node=2 --gres=gpu:2 --cpus-per-task=1 \
	"$EX/farm.sbatch" "$D/jobs.txt" "$D/farm")
check "resubmitted job $jid completed" test "$(slurm_wait_job "$jid" 60)" = COMPLETED
check "both shards resumed" test "$(cat "$D"/calls2/call-x-* | grep -c "^args=farm --resume $D/farm/shard-[01] ")" = 2

echo "== examples/slurm/farm-array.sbatch: one shard per element"
ajid=$(submit_farm "$D/calls3" --array=0-2 --cpus-per-task=1 "$EX/farm-array.sbatch" "$D/jobs.txt" "$D/farma")
for a in 0 1 2; do
	check "element $a completed" test "$(slurm_wait_job "${ajid}_$a" 60)" = COMPLETED
	check "element $a: farm in shard-$a" grep -q "args=farm --dir $D/farma/shard-$a " "$D"/calls3/call-"$a"-*
	check "element $a: one GPU" grep -Eq '^CUDA_VISIBLE_DEVICES=[01]$' "$D"/calls3/call-"$a"-*
done

echo "== examples/slurm/mpi.sbatch: 8 ranks under srun --mpi=pmix, 4 per GPU"
cat >"$D/fake-exec" <<EOF
#!/bin/bash
# gpushare exec stand-in: prints the binding its options ask for.
a=()
while ((\$#)); do
	case \$1 in --bind | --ranks-per-gpu) a+=("\$1" "\$2"); shift ;; --) break ;; esac
	shift
done
exec "$H/print_binding" "\${a[@]}"
EOF
chmod +x "$D/fake-exec"
jid=$(cd "$D" && GPUSHARE=$D/fake-exec APP=/bin/true sbatch --parsable -o "$D/mpi-ex.out" "$EX/mpi.sbatch")
check "mpi.sbatch job $jid completed" test "$(slurm_wait_job "$jid" 60)" = COMPLETED
check "8 ranks, each seeing 8 local ranks" test "$(grep -c 'local_size=8 ' "$D/mpi-ex.out")" = 8
check "block, 4 ranks per GPU: ranks 0-3 on GPU 0, 4-7 on GPU 1" \
	test "$(grep -o 'local_rank=[0-9] .* gpu=[0-9]' "$D/mpi-ex.out" | sed 's/local_rank=\([0-9]\).* gpu=/\1:/' |
		sort | tr '\n' ' ')" = "0:0 1:0 2:0 3:0 4:1 5:1 6:1 7:1 "

if mpi_available; then
	echo "== mpirun inside a Slurm allocation: Open MPI's variables win"
	args=(--oversubscribe)
	((EUID == 0)) && args+=(--allow-run-as-root)
	jid=$(sbatch --parsable -n 2 -o "$D/mpi.out" --wrap \
		"mpirun ${args[*]} -x GPUSHARE_NVML_LIBRARY -x FAKE_NVML_GPUS $H/print_binding")
	check "job $jid completed" test "$(slurm_wait_job "$jid" 60)" = COMPLETED
	check "two Open MPI ranks of 2, round-robin over both GPUs" \
		test "$(grep -c 'launcher=openmpi .*local_size=2 .*max_ranks_per_gpu=1' "$D/mpi.out")" = 2
fi
finish "scale-out fixture"
