// mig-parted's rules for a config plan writes (tests/k8s/validate.mjs):
//  - the shape of a MigConfigSpec: devices and mig-enabled required,
//    device-filter a string or a list of them: NVIDIA/mig-parted
//    api/spec/v1/spec.go (MigConfigSpec.UnmarshalJSON);
//  - a device-filter (plan writes one for every GPU it knows): the PCI
//    device IDs mig-parted matches, as its own configs list them per model:
//    NVIDIA/mig-parted deployments/systemd/config-default.yaml;
//  - the layout fits the GPU: mig-parted clears the GPU and then creates
//    the instances through NVML, which refuses a placement the GPU has not
//    (NVIDIA MIG user guide, the A100/H100/H200 placement tables: eight
//    memory slices, each profile of a size and allowed starts, seven
//    compute slices). Written here independently of lib/plan/plan_mig.c.
const FAMILIES = {
  // device IDs: profiles [name, memory slices, allowed starts, compute slices]
  "80GB": { ids: ["0x233010DE", "0x233110DE", "0x20B210DE", "0x20B510DE"], g: ["1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"] },
  "94GB": { ids: ["0x232110DE"], g: ["1g.12gb", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb"] },
  "141GB": { ids: ["0x233510DE", "0x233B10DE"], g: ["1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"] },
  "40GB": { ids: ["0x20B010DE", "0x20B110DE", "0x20F110DE"], g: ["1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"] },
};
const SHAPES = [
  [1, [0, 1, 2, 3, 4, 5, 6], 1],
  [2, [0, 2, 4, 6], 1],
  [2, [0, 2, 4], 2],
  [4, [0, 4], 3],
  [4, [0], 4],
  [8, [0], 7],
];

function fits(inst, taken) {
  if (!inst.length) return true;
  const [[size, starts], ...rest] = inst;
  for (const s of starts) {
    const mask = ((1 << size) - 1) << s;
    if (s + size <= 8 && !(taken & mask) && fits(rest, taken | mask)) return true;
  }
  return false;
}

// fail(msg): the caller's report of a breach; it does not return.
export function checkMigParted(o, path, fail) {
  for (const [name, specs] of Object.entries(o["mig-configs"])) {
    if (!Array.isArray(specs)) fail(`${path}.${name}: not a list of MigConfigSpecs`);
    specs.forEach((spec, i) => {
      const at = `${path}.mig-configs.${name}[${i}]`;
      for (const k of ["devices", "mig-enabled"]) if (!(k in spec)) fail(`${at}: missing required field: ${k}`);
      const filter = spec["device-filter"];
      if (filter === undefined) fail(`${at}: no device-filter: the layout would be applied to every GPU model`);
      const ids = [].concat(filter);
      const fam = Object.values(FAMILIES).find((f) => ids.every((id) => f.ids.includes(id)));
      if (!fam) fail(`${at}.device-filter ${JSON.stringify(filter)}: not the device IDs of one GPU family`);
      if (!spec["mig-enabled"]) return;
      const inst = [];
      let compute = 0;
      for (const [prof, count] of Object.entries(spec["mig-devices"] || {})) {
        const base = prof.replace(/\+me$/, "");
        const k = fam.g.indexOf(base);
        if (k < 0) fail(`${at}.mig-devices: ${prof} is not a profile of that GPU`);
        if (!(Number.isInteger(count) && count >= 1)) fail(`${at}.mig-devices.${prof}: ${count} is not a whole number >= 1`);
        if (prof.endsWith("+me") && count > 1) fail(`${at}.mig-devices.${prof}: at most one +me instance`);
        for (let c = 0; c < count; c++) inst.push(SHAPES[k]);
        compute += count * SHAPES[k][2];
      }
      inst.sort((a, b) => b[0] - a[0]);
      if (compute > 7 || !fits(inst, 0))
        fail(`${at}.mig-devices ${JSON.stringify(spec["mig-devices"])}: cannot be placed on the GPU (MIG placement rules)`);
    });
  }
}
