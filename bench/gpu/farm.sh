#!/usr/bin/env bash
# GPU benchmarks of `gpushare farm`. Usage: bench/gpu/farm.sh BUILD_DIR OUT_DIR
#  1. grid: farm_job (examples/farm_job.cu, built as BUILD_DIR/farm_job) x JOBS (default 200) on GPU 0 with K = 1, 2, 4, 8
#     slots under timeslice and mps: makespan and jobs/s, against the same
#     jobs one after another (K = 1 under timeslice);
#  2. calibration: the same farm without --slots (mps): the K it picks and
#     its jobs/s, against the best K of the grid;
#  3. two GPUs (when the machine has two): the farm on GPUs 0,1 against GPU 0
#     alone, at the best K of the grid, under TWO_STRATEGIES (default "mps
#     timeslice"), with each farm's mean job duration;
#  4. a PyTorch job (when python3 has torch with CUDA): TORCH_JOBS (default
#     32) small fp16 matmul jobs, each its own Python process as a per-file
#     inference job would be, at K = TORCH_KS (default "1 2 4 8") under
#     timeslice and mps, against the same jobs one after another.
# Everything is written under OUT_DIR (each farm's directory, its --json
# summary, summary.md). Every MPS daemon is gpushare's own private one,
# stopped by the farm that started it; the script checks at the end that none
# is left. Environment: JOBS (200), KS ("1 2 4 8"), PHASES
# (grid,calibrate,two,torch), JOB_ARGS (farm_job options, "--n 256 --steps 2000"),
# TORCH_JOBS, TORCH_KS.
set -uo pipefail
B=$(cd "${1:?build dir}" && pwd)
O=${2:?out dir}
mkdir -p "$O"
O=$(cd "$O" && pwd)
G=$B/gpushare
JOB=${JOB:-$B/farm_job}
JOBS=${JOBS:-200}
KS=${KS:-1 2 4 8}
PHASES=${PHASES:-grid,calibrate,two,torch}
TORCH_JOBS=${TORCH_JOBS:-32}
TWO_STRATEGIES=${TWO_STRATEGIES:-mps timeslice}
TORCH_KS=${TORCH_KS:-1 2 4 8}
JOB_ARGS=${JOB_ARGS:---n 256 --steps 2000}
S=$O/summary.md
has() { case ",$PHASES," in *",$1,"*) return 0 ;; esac; return 1; }
jq_py() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); $2" "$1"; }
log() { echo "$*" | tee -a "$S"; }
# mps daemons still running whose pipe directory is one of gpushare's farms
our_daemons() {
	local p
	for p in $(pgrep -f nvidia-cuda-mps-control || true); do
		tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -q '^CUDA_MPS_PIPE_DIRECTORY=.*/gpushare[^/]*/farm-' && echo "$p"
	done
}
trap 'for p in $(our_daemons); do echo quit | CUDA_MPS_PIPE_DIRECTORY=$(tr "\0" "\n" <"/proc/$p/environ" | sed -n "s/^CUDA_MPS_PIPE_DIRECTORY=//p") nvidia-cuda-mps-control; done' EXIT

[[ -x $JOB ]] || { echo "no $JOB: build with CUDA first" >&2; exit 1; }
unset CUDA_VISIBLE_DEVICES
: >"$S"
log "# gpushare farm on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
log ""
log "date $(date -u +%FT%TZ); $JOBS x \`farm_job $JOB_ARGS\`; gpushare $("$G" version | cut -d' ' -f2)"
log ""
for ((i = 0; i < JOBS; i++)); do echo "$JOB $JOB_ARGS"; done >"$O/jobs.txt"

# farm NAME ARGS...: run a farm into O/NAME with --json; prints "seconds jobs/s slots done"
farm() {
	local name=$1
	shift
	rm -rf "${O:?}/$name"
	"$G" farm --dir "$O/$name" --json -q "$@" >"$O/$name.json" 2>"$O/$name.err"
	echo "exit $?" >>"$O/$name.err"
	jq_py "$O/$name.json" "r = d['run']; s = d['summary']
print('%.2f %.3f %d %d' % (r['seconds'], r['attempts_per_second'], r['slots'], s['done']))" 2>/dev/null ||
		echo "nan nan 0 0"
}

# mean_job FARM_DIR: the mean duration of the attempts in its journal
mean_job() {
	python3 -c "
import json, sys
d = [r['duration_seconds'] for r in map(json.loads, open(sys.argv[1] + '/journal.jsonl')) if r.get('type') == 'attempt']
print('%.3f' % (sum(d) / len(d)) if d else 'nan')" "$1" 2>/dev/null || echo nan
}

if has grid; then
	log "## Makespan of $JOBS jobs on one GPU"
	log ""
	log "| strategy | K | makespan (s) | jobs/s | vs one after another | done |"
	log "| --- | ---: | ---: | ---: | ---: | ---: |"
	read -r base_s base_r _ base_done < <(farm seq --gpus 0 --strategy timeslice --slots 1 "$O/jobs.txt")
	log "| one after another (timeslice, K=1) | 1 | $base_s | $base_r | 1.00x | $base_done |"
	best_k=1 best_r=0
	for st in timeslice mps; do
		for k in $KS; do
			[[ $st == timeslice && $k == 1 ]] && continue
			read -r s r _ done_ < <(farm "grid-$st-k$k" --gpus 0 --strategy "$st" --slots "$k" "$O/jobs.txt")
			x=$(python3 -c "print('%.2fx' % ($r / $base_r))" 2>/dev/null || echo "?")
			log "| $st | $k | $s | $r | $x | $done_ |"
			if [[ $st == mps ]] && python3 -c "import sys; sys.exit(0 if $r > $best_r else 1)" 2>/dev/null; then
				best_k=$k best_r=$r
			fi
		done
	done
	log ""
	log "best K by hand under mps: $best_k ($best_r jobs/s)"
	log ""
fi

if has calibrate; then
	read -r s r k done_ < <(farm calibrated --gpus 0 --strategy mps "$O/jobs.txt")
	cal=$(jq_py "$O/calibrated.json" "print(', '.join('K=%d: %.2f jobs/s' % (c['slots'], c['jobs_per_second']) for c in d['run']['calibration']))" 2>/dev/null)
	log "## Calibration (mps, no --slots)"
	log ""
	line="picked K=$k ($cal); the whole farm: makespan $s s, $r jobs/s (calibration rounds included), $done_ done"
	[[ -n ${best_k:-} ]] && line+="; best K of the grid: $best_k at $best_r jobs/s"
	log "$line"
	log ""
fi

if has two; then
	n=$(nvidia-smi -L | grep -c '^GPU ')
	if ((n >= 2)); then
		k=${best_k:-4}
		for st in $TWO_STRATEGIES; do
			read -r s1 r1 _ d1 < <(farm "one-gpu-$st" --gpus 0 --strategy "$st" --slots "$k" "$O/jobs.txt")
			read -r s2 r2 _ d2 < <(farm "two-gpus-$st" --gpus 0,1 --strategy "$st" --slots "$k" "$O/jobs.txt")
			busy=$(jq_py "$O/two-gpus-$st.json" "print(', '.join('%.0f%%' % (100 * g['busy_fraction']) for g in d['summary']['gpus']))" 2>/dev/null)
			log "## Two GPUs ($st, K=$k per GPU)"
			log ""
			log "| GPUs | makespan (s) | jobs/s | done | mean job (s) | busy |"
			log "| --- | ---: | ---: | ---: | ---: | --- |"
			log "| 0 | $s1 | $r1 | $d1 | $(mean_job "$O/one-gpu-$st") | |"
			log "| 0,1 | $s2 | $r2 | $d2 | $(mean_job "$O/two-gpus-$st") | $busy |"
			log ""
			log "speed-up on two GPUs: $(python3 -c "print('%.2fx' % ($r2 / $r1))" 2>/dev/null || echo '?')"
			log ""
		done
	else
		log "(two-GPU phase skipped: $n GPU)"
	fi
fi

if has torch && python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
	cat >"$O/torch_job.py" <<'EOF'
# A small PyTorch job: 200 fp16 512x512 matmuls, as a per-item inference would.
import torch
a = torch.randn(512, 512, device="cuda", dtype=torch.float16)
for _ in range(200):
    a = torch.tanh(a @ a)
torch.cuda.synchronize()
print(float(a.float().mean()))
EOF
	n=$TORCH_JOBS
	for ((i = 0; i < n; i++)); do echo "python3 $O/torch_job.py"; done >"$O/torch_jobs.txt"
	log "## PyTorch jobs ($n x torch_job.py)"
	log ""
	log "| strategy | K | makespan (s) | jobs/s | vs one after another | done |"
	log "| --- | ---: | ---: | ---: | ---: | ---: |"
	read -r tb_s tb_r _ tb_done < <(farm torch-seq --gpus 0 --strategy timeslice --slots 1 "$O/torch_jobs.txt")
	log "| one after another (timeslice, K=1) | 1 | $tb_s | $tb_r | 1.00x | $tb_done |"
	for st in timeslice mps; do
		for k in $TORCH_KS; do
			[[ $st == timeslice && $k == 1 ]] && continue
			read -r s r _ done_ < <(farm "torch-$st-k$k" --gpus 0 --strategy "$st" --slots "$k" "$O/torch_jobs.txt")
			x=$(python3 -c "print('%.2fx' % ($r / $tb_r))" 2>/dev/null || echo "?")
			log "| $st | $k | $s | $r | $x | $done_ |"
		done
	done
	log ""
elif has torch; then
	log "(PyTorch phase skipped: python3 has no torch with CUDA)"
fi

left=$(our_daemons)
log "MPS daemons of farms left running: ${left:-none}"
cat "$S"
