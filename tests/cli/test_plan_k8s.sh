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

valid() { # valid WHAT FILE: the validator accepts FILE
	if node "$V" "$2" >"$tmp/v.out" 2>&1; then
		ok "$1: valid ($(grep -c '^ok' "$tmp/v.out") documents)"
	else
		fail "$1: $(cat "$tmp/v.out")"
	fi
}
invalid() { # invalid WHAT PATTERN FILE: the validator refuses FILE naming PATTERN
	if node "$V" "$3" >"$tmp/v.out" 2>&1; then
		fail "$1: the validator accepted it"
	elif grep -qF -- "$2" "$tmp/v.out"; then
		ok "$1: refused ($(grep FAIL "$tmp/v.out"))"
	else
		fail "$1: refused for another reason: $(cat "$tmp/v.out")"
	fi
}

echo "== every Kubernetes output of the fixtures"
n=0
for fx in mps-h100 timeslice-a100; do
	for target in k8s-device-plugin k8s-dra; do
		for extra in "" "--strategy mps" "--strategy mps-split" "--strategy timeslice" "--mem-per-client 10G" \
			"--goal slo --slo-p99 2ms"; do
			# shellcheck disable=SC2086 # split on purpose
			if "$GPUSHARE" plan "$FIX/$fx" --for "$target" $extra >"$tmp/o.yaml" 2>"$tmp/err"; then
				valid "$fx --for $target $extra" "$tmp/o.yaml"
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
"$GPUSHARE" plan "$FIX/mps-h100" --for k8s-dra >"$tmp/dra.yaml"
check "the DRA claim is resource.k8s.io/v1 with the driver's GpuConfig, MPS, 25%" \
	bash -c "grep -q 'apiVersion: resource.k8s.io/v1$' '$tmp/dra.yaml' && grep -q 'kind: GpuConfig' '$tmp/dra.yaml' &&
		grep -q 'strategy: MPS' '$tmp/dra.yaml' && grep -q 'defaultActiveThreadPercentage: 25$' '$tmp/dra.yaml'"

echo "== names YAML would read as another type stay strings"
for name in true null 1e3 0x10 yes; do
	"$GPUSHARE" plan "$FIX/timeslice-a100" --for k8s-device-plugin --name "$name" >"$tmp/n.yaml"
	check "--name $name is written quoted" grep -qx "  name: \"$name\"" "$tmp/n.yaml"
	valid "--name $name" "$tmp/n.yaml"
done

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
sed 's/strategy: MPS/strategy: TimeSlicing/' "$tmp/dra.yaml" >"$tmp/bad5.yaml"
invalid "strategy and config of different kinds" "mpsConfig with strategy TimeSlicing" "$tmp/bad5.yaml"
"$GPUSHARE" plan "$FIX/timeslice-a100" --for k8s-device-plugin >"$tmp/dp.yaml"
sed -E 's/replicas: ([0-9]+)/replicas: "\1"/' "$tmp/dp.yaml" >"$tmp/bad6.yaml"
invalid "replicas as a string" "is not a whole number >= 2" "$tmp/bad6.yaml"
sed 's/^kind: ConfigMap/kind: ConfigMapp/' "$tmp/dp.yaml" >"$tmp/bad7.yaml"
invalid "an unknown kind" "no ConfigMapp" "$tmp/bad7.yaml"

finish plan-k8s
