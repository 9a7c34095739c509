// Validate what `gpushare plan` writes for Kubernetes (tests/cli/test_plan_k8s.sh):
//   node validate.mjs FILE...
// Every YAML document of each file is parsed (yaml, YAML 1.2, strict) and:
//  - a Kubernetes object (apiVersion + kind) is validated against the real
//    OpenAPI schemas of kubernetes-models, and every field must be one the
//    API knows (the models' declarations, read from their .d.ts files:
//    the schemas alone let unknown fields through);
//  - the NVIDIA DRA driver's opaque GpuConfig (resource.nvidia.com/v1beta1)
//    is checked against the driver's rules, mirrored here: strategy
//    TimeSlicing or MPS, only the config of that strategy, interval one of
//    Default/Short/Medium/Long, defaultActiveThreadPercentage a whole number
//    1..100, memory limits positive Kubernetes quantities;
//  - the NVIDIA device plugin's config (version: v1, no kind) against its
//    rules: sharing is timeSlicing or mps (not both), resources named
//    nvidia.com/gpu with whole replicas of at least 2.
//  - the consumers' own rules, each from the consumer's source file named
//    beside it below: the device plugin's MPS daemon refuses more than 48
//    replicas; the DRA driver refuses a pinned memory limit under 1Mi and
//    every GpuConfig whose sharing strategy's feature gate is off (so a file
//    with such a claim must name the gate it needs); the device plugin's
//    chart reads its ConfigMap from the release's namespace (so the
//    ConfigMap names one); a mig-parted config's layout must fit the GPU's
//    placement rules (tests/k8s/mig_placement.mjs) and name the GPU model
//    it is for (device-filter).
//  - the Helm chart values plan writes (values.yaml): the device plugin's
//    (config.name, gfd.enabled with MPS) and the DRA driver's
//    (gpuResourcesEnabledOverride, featureGates).
//   node validate.mjs --k8s-only FILE...: every document must be a
//   Kubernetes object (what `kubectl apply -f` takes).
// Prints one line per document; exits 1 on the first failure.
//   node validate.mjs --batch LIST: each line of LIST is one validation,
//   its arguments ([--k8s-only] FILE...) separated by tabs; prints for the
//   Nth line "group N: ok: D documents" or "group N: FAIL: why" (its first
//   failure) and exits 0. One node process for many files: starting node
//   and loading the schemas takes about a second each time.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { parseAllDocuments } from "yaml";
import { checkMigParted } from "./mig_placement.mjs";

const require = createRequire(import.meta.url);
const pkgDir = dirname(require.resolve("kubernetes-models/package.json"));
const nodeModules = dirname(pkgDir);

class Invalid extends Error {}
function fail(msg) {
  throw new Invalid(msg);
}

// Property names and types of an interface in a models .d.ts file.
const dtsCache = new Map();
function readDts(file) {
  if (dtsCache.has(file)) return dtsCache.get(file);
  const text = readFileSync(file, "utf8");
  const imports = {};
  for (const m of text.matchAll(/import \{ ([^}]+) \} from "([^"]+)";/g)) {
    for (const name of m[1].split(",").map((s) => s.trim())) {
      let target = m[2];
      if (target.startsWith(".")) target = join(dirname(file), target);
      else target = join(nodeModules, target);
      imports[name] = target.replace(/\.js$/, "") + ".d.ts";
    }
  }
  const body = text.match(/export interface \w+(?: extends [\w, ]+)? \{([\s\S]*?)\n\}/);
  const props = {};
  if (body) {
    for (const m of body[1].matchAll(/^ {4}"([^"]+)"\??: (.+?);?$/gm)) props[m[1]] = m[2];
  }
  const r = { props, imports };
  dtsCache.set(file, r);
  return r;
}

// Every field of obj is declared by the model (recursively).
function checkFields(obj, file, path) {
  if (obj === null || typeof obj !== "object") return;
  const { props, imports } = readDts(file);
  for (const [k, v] of Object.entries(obj)) {
    if (!(k in props)) fail(`${path}.${k}: not a field of ${file.split("/").pop().replace(".d.ts", "")}`);
    const t = props[k];
    const m = t.match(/^Array<(I\w+)>$/) || t.match(/^(I\w+)$/);
    if (!m || !imports[m[1]] || /RawExtension/.test(m[1])) continue; // scalars, maps, opaque
    const items = t.startsWith("Array<") ? v : [v];
    if (!Array.isArray(items)) fail(`${path}.${k}: not a list`);
    items.forEach((it, i) => checkFields(it, imports[m[1]], t.startsWith("Array<") ? `${path}.${k}[${i}]` : `${path}.${k}`));
  }
}

const QUANTITY = /^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$/;

// 1 MiB: the DRA driver sets the MPS pinned memory limit in whole MiB and
// refuses 0 ("value set too low"): k8s-dra-driver-gpu
// api/nvidia.com/resource/v1beta1/sharing.go (limit.Megabyte).
const MIB = 1024 * 1024;
const UNITS = { "": 1, Ki: 1024, Mi: MIB, Gi: 1024 * MIB, Ti: 1024 * 1024 * MIB, k: 1e3, M: 1e6, G: 1e9, T: 1e12 };
function quantityBytes(q) {
  const m = String(q).match(/^([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$/);
  return m ? parseFloat(m[1]) * UNITS[m[2] || ""] : NaN;
}

// The DRA driver's feature gate of each sharing strategy: k8s-dra-driver-gpu
// api/nvidia.com/resource/v1beta1/validate.go (validateSharingStrategy);
// both Alpha and off by default: pkg/featuregates/featuregates.go.
const DRA_GATES = { MPS: "MPSSupport", TimeSlicing: "TimeSlicingSettings" };

// The most MPS clients (replicas) per GPU the device plugin's MPS daemon
// accepts on Volta and newer: k8s-device-plugin
// cmd/mps-control-daemon/mps/device.go (maxClients).
const MPS_MAX_REPLICAS = 48;

let fileText = "";

function checkGpuConfig(p, path) {
  if (p.apiVersion !== "resource.nvidia.com/v1beta1" || p.kind !== "GpuConfig")
    fail(`${path}: not a resource.nvidia.com/v1beta1 GpuConfig`);
  for (const k of Object.keys(p)) if (!["apiVersion", "kind", "sharing"].includes(k)) fail(`${path}.${k}: unknown field`);
  const s = p.sharing;
  if (!s) return;
  for (const k of Object.keys(s))
    if (!["strategy", "timeSlicingConfig", "mpsConfig"].includes(k)) fail(`${path}.sharing.${k}: unknown field`);
  const gate = DRA_GATES[s.strategy];
  if (gate && !fileText.includes(gate))
    fail(`${path}: sharing strategy ${s.strategy} needs the DRA driver's ${gate} feature gate (off by default), which the file does not name`);
  if (s.strategy === "TimeSlicing") {
    if ("mpsConfig" in s) fail(`${path}.sharing: mpsConfig with strategy TimeSlicing`);
    const t = s.timeSlicingConfig;
    if (t !== undefined) {
      for (const k of Object.keys(t)) if (k !== "interval") fail(`${path}.sharing.timeSlicingConfig.${k}: unknown field`);
      if (t.interval !== undefined && !["Default", "Short", "Medium", "Long"].includes(t.interval))
        fail(`${path}.sharing.timeSlicingConfig.interval '${t.interval}' is not Default, Short, Medium or Long`);
    }
  } else if (s.strategy === "MPS") {
    if ("timeSlicingConfig" in s) fail(`${path}.sharing: timeSlicingConfig with strategy MPS`);
    const m = s.mpsConfig;
    if (m !== undefined) {
      for (const k of Object.keys(m))
        if (!["defaultActiveThreadPercentage", "defaultPinnedDeviceMemoryLimit", "defaultPerDevicePinnedMemoryLimit"].includes(k))
          fail(`${path}.sharing.mpsConfig.${k}: unknown field`);
      const pct = m.defaultActiveThreadPercentage;
      if (pct !== undefined && !(Number.isInteger(pct) && pct >= 1 && pct <= 100))
        fail(`${path}.sharing.mpsConfig.defaultActiveThreadPercentage ${JSON.stringify(pct)} is not a whole number 1..100`);
      const q = m.defaultPinnedDeviceMemoryLimit;
      if (q !== undefined && !(typeof q === "string" && QUANTITY.test(q) && parseFloat(q) > 0))
        fail(`${path}.sharing.mpsConfig.defaultPinnedDeviceMemoryLimit ${JSON.stringify(q)} is not a positive quantity`);
      if (q !== undefined && !(quantityBytes(q) >= MIB))
        fail(`${path}.sharing.mpsConfig.defaultPinnedDeviceMemoryLimit ${q} is under 1Mi, which the DRA driver refuses`);
      for (const [dev, v] of Object.entries(m.defaultPerDevicePinnedMemoryLimit || {}))
        if (!(typeof v === "string" && QUANTITY.test(v) && parseFloat(v) > 0))
          fail(`${path}.sharing.mpsConfig.defaultPerDevicePinnedMemoryLimit.${dev} is not a positive quantity`);
        else if (!(quantityBytes(v) >= MIB))
          fail(`${path}.sharing.mpsConfig.defaultPerDevicePinnedMemoryLimit.${dev} is under 1Mi, which the DRA driver refuses`);
    }
  } else {
    fail(`${path}.sharing.strategy ${JSON.stringify(s.strategy)} is not TimeSlicing or MPS`);
  }
}

function checkDevicePluginConfig(c, path) {
  if (c.version !== "v1") fail(`${path}: version is not v1`);
  const sh = c.sharing;
  if (!sh) fail(`${path}: no sharing`);
  const kinds = Object.keys(sh);
  if (kinds.length !== 1 || !["timeSlicing", "mps"].includes(kinds[0]))
    fail(`${path}.sharing: exactly one of timeSlicing and mps (got ${kinds.join(", ")})`);
  const r = sh[kinds[0]];
  for (const k of Object.keys(r))
    if (!["renameByDefault", "failRequestsGreaterThanOne", "resources"].includes(k)) fail(`${path}.sharing.${kinds[0]}.${k}: unknown field`);
  if (!Array.isArray(r.resources) || !r.resources.length) fail(`${path}: no resources`);
  for (const res of r.resources) {
    if (res.name !== "nvidia.com/gpu") fail(`${path}: resource ${res.name} is not nvidia.com/gpu`);
    if (!(Number.isInteger(res.replicas) && res.replicas >= 2)) fail(`${path}: replicas ${JSON.stringify(res.replicas)} is not a whole number >= 2`);
    if (kinds[0] === "mps" && res.replicas > MPS_MAX_REPLICAS)
      fail(`${path}: replicas ${res.replicas} over ${MPS_MAX_REPLICAS}, the most the device plugin's MPS daemon accepts`);
  }
  if (c.flags && !["none", "single", "mixed"].includes(c.flags.migStrategy)) fail(`${path}.flags.migStrategy`);
}

async function checkObject(o, path) {
  const [group, version] = o.apiVersion.includes("/") ? o.apiVersion.split("/") : ["", o.apiVersion];
  const mod = group ? `kubernetes-models/${group}/${version}` : `kubernetes-models/${version}`;
  let Model;
  try {
    Model = (await import(mod))[o.kind];
  } catch (e) {
    fail(`${path}: kubernetes-models has no ${o.apiVersion} (${e.message})`);
  }
  if (!Model) fail(`${path}: kubernetes-models has no ${o.kind} in ${o.apiVersion}`);
  try {
    new Model(o).validate();
  } catch (e) {
    fail(`${path}: ${o.apiVersion} ${o.kind}: ${e.message}`);
  }
  const dts = join(pkgDir, group || "", version, `${o.kind}.d.ts`);
  checkFields(o, dts, `${path}`);
  if (o.kind === "ResourceClaimTemplate" || o.kind === "ResourceClaim") {
    const configs = (o.kind === "ResourceClaim" ? o.spec?.devices?.config : o.spec?.spec?.devices?.config) || [];
    if (!configs.length) fail(`${path}: no device config`);
    configs.forEach((c, i) => {
      if (c.opaque?.driver !== "gpu.nvidia.com") fail(`${path}: config ${i} is not for the driver gpu.nvidia.com`);
      checkGpuConfig(c.opaque.parameters, `${path}.spec${o.kind === "ResourceClaim" ? "" : ".spec"}.devices.config[${i}].opaque.parameters`);
    });
  }
  if (o.kind === "ConfigMap") {
    // The chart reads config.name from its own namespace, never "default":
    // k8s-device-plugin deployments/helm/nvidia-device-plugin/templates/
    // _helpers.tpl (configMapName, namespace) and validation.yml.
    if (!o.metadata?.namespace) fail(`${path}: the device plugin's ConfigMap names no namespace (the chart reads it from its own)`);
    if (o.metadata.namespace === "default") fail(`${path}: the device plugin's chart refuses the namespace default`);
    for (const [k, v] of Object.entries(o.data || {})) {
      const docs = parseAllDocuments(v, { strict: true, uniqueKeys: true });
      docs.forEach((d, j) => {
        if (d.errors.length) fail(`${path}.data.${k}: ${d.errors[0].message}`);
        checkDevicePluginConfig(d.toJS(), `${path}.data.${k}#${j}`);
      });
    }
  }
}

// The Helm chart values plan writes beside its objects.
function checkValues(v, path) {
  if (v.config !== undefined) {
    // k8s-device-plugin deployments/helm/nvidia-device-plugin/values.yaml
    for (const k of Object.keys(v)) if (!["config", "gfd"].includes(k)) fail(`${path}.${k}: not a value plan writes`);
    if (typeof v.config.name !== "string" || !v.config.name) fail(`${path}.config.name: no ConfigMap named`);
    if (v.gfd !== undefined && v.gfd.enabled !== true) fail(`${path}.gfd.enabled is not true`);
    return "device plugin chart values";
  }
  // k8s-dra-driver-gpu deployments/helm/dra-driver-nvidia-gpu/values.yaml;
  // GPU resources fail the chart without the override:
  // templates/validation.yaml.
  if (v.gpuResourcesEnabledOverride !== true) fail(`${path}: gpuResourcesEnabledOverride is not true (the chart refuses GPU resources without it)`);
  const gates = Object.entries(v.featureGates || {});
  if (!gates.length || !gates.every(([g, on]) => Object.values(DRA_GATES).includes(g) && on === true))
    fail(`${path}.featureGates: not ${Object.values(DRA_GATES).join(" or ")} turned on`);
  return "DRA driver chart values";
}

// Validates every document of each file; returns how many there were.
// Throws Invalid at the first failure.
async function validateFiles(args, log) {
  let k8sOnly = false;
  const files = args.filter((a) => (a === "--k8s-only" ? ((k8sOnly = true), false) : true));
  if (!files.length) fail("usage: node validate.mjs [--k8s-only] FILE... | --batch LIST");
  let n = 0;
  for (const f of files) {
    try {
      fileText = readFileSync(f, "utf8");
    } catch (e) {
      fail(`${f}: ${e.message}`);
    }
    const docs = parseAllDocuments(fileText, { strict: true, uniqueKeys: true });
    if (!docs.length) fail(`${f}: no YAML document`);
    for (const [i, d] of docs.entries()) {
      const path = `${f}#${i}`;
      if (d.errors.length) fail(`${path}: ${d.errors[0].message}`);
      if (d.warnings.length) fail(`${path}: ${d.warnings[0].message}`);
      const o = d.toJS();
      if (k8sOnly && !(o && o.apiVersion && o.kind)) fail(`${path}: not a Kubernetes object (kubectl apply refuses it: apiVersion or kind not set)`);
      if (o && o.apiVersion && o.kind) {
        await checkObject(o, path);
        log(`ok: ${path}: ${o.apiVersion} ${o.kind} ${o.metadata?.name ?? ""}`);
      } else if (o && o.version === "v1" && o.sharing) {
        checkDevicePluginConfig(o, path);
        log(`ok: ${path}: device plugin config (${Object.keys(o.sharing)[0]})`);
      } else if (o && o.version === "v1" && o["mig-configs"]) {
        checkMigParted(o, path, fail);
        log(`ok: ${path}: mig-parted config (not a Kubernetes object)`);
      } else if (o && (o.config !== undefined || o.featureGates !== undefined)) {
        log(`ok: ${path}: ${checkValues(o, path)}`);
      } else {
        fail(`${path}: neither a Kubernetes object nor a device plugin config`);
      }
      n++;
    }
  }
  return n;
}

// An error of the validator itself (not an Invalid) is never taken for a
// verdict on a file: it ends the run with its stack.
async function verdict(args, log) {
  try {
    return { n: await validateFiles(args, log) };
  } catch (e) {
    if (!(e instanceof Invalid)) throw e;
    return { why: e.message };
  }
}

const argv = process.argv.slice(2);
if (argv[0] === "--batch" && argv.length === 2) {
  const lines = readFileSync(argv[1], "utf8").split("\n").filter((l) => l !== "");
  for (const [i, line] of lines.entries()) {
    const v = await verdict(line.split("\t"), () => {});
    console.log(v.why === undefined ? `group ${i + 1}: ok: ${v.n} documents` : `group ${i + 1}: FAIL: ${v.why.replace(/\n+/g, " | ")}`);
  }
} else {
  const v = await verdict(argv, (l) => console.log(l));
  if (v.why !== undefined) {
    console.error(`FAIL: ${v.why}`);
    process.exit(1);
  }
}
