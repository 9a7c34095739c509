/*
 * gpushare plan --for k8s-device-plugin, k8s-dra, mig-parted: YAML written
 * only through libyaml's emitter. Strings that YAML would read as another
 * type ("100", "true", "null", "1.5", "") are emitted double-quoted, numbers
 * plain; multi-document output gets its "---" from the emitter. The comment
 * block (which libyaml cannot emit) is written before the stream.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "gpushare/gpushare.h"
#include "gpushare/strategy.h"
#include "plan_internal.h"

struct yw {
	yaml_emitter_t e;
	struct gpushare_buf *b;
	int err;
	bool open;
};

static int write_handler(void *data, unsigned char *buffer, size_t size)
{
	struct yw *w = data;

	if (gpushare_buf_add(w->b, buffer, size)) {
		w->err = GPUSHARE_E_NOMEM;
		return 0;
	}
	return 1;
}

static void emit(struct yw *w, yaml_event_t *ev, int made)
{
	if (w->err)
		return;
	if (!made) {
		w->err = gpushare_fail(GPUSHARE_E_NOMEM, "libyaml: cannot make an event");
		return;
	}
	if (!yaml_emitter_emit(&w->e, ev) && !w->err)
		w->err = gpushare_fail(GPUSHARE_E_INVAL, "libyaml: %s", w->e.problem ? w->e.problem : "emitter error");
}

static int yw_open(struct yw *w, struct gpushare_buf *b)
{
	yaml_event_t ev;

	memset(w, 0, sizeof(*w));
	w->b = b;
	if (!yaml_emitter_initialize(&w->e))
		return w->err = gpushare_fail(GPUSHARE_E_NOMEM, "libyaml: cannot initialise the emitter");
	w->open = true;
	yaml_emitter_set_output(&w->e, write_handler, w);
	yaml_emitter_set_unicode(&w->e, 1);
	yaml_emitter_set_width(&w->e, 100);
	yaml_emitter_set_indent(&w->e, 2);
	emit(w, &ev, yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING));
	return w->err;
}

static int yw_close(struct yw *w)
{
	yaml_event_t ev;

	emit(w, &ev, yaml_stream_end_event_initialize(&ev));
	if (!w->err && !yaml_emitter_flush(&w->e))
		w->err = gpushare_fail(GPUSHARE_E_IO, "libyaml: cannot flush");
	if (w->open)
		yaml_emitter_delete(&w->e);
	w->open = false;
	return w->err;
}

static void doc_start(struct yw *w, bool first)
{
	yaml_event_t ev;

	emit(w, &ev, yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, first));
}

static void doc_end(struct yw *w)
{
	yaml_event_t ev;

	emit(w, &ev, yaml_document_end_event_initialize(&ev, 1));
}

static void map_start(struct yw *w)
{
	yaml_event_t ev;

	emit(w, &ev, yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE));
}

static void map_end(struct yw *w)
{
	yaml_event_t ev;

	emit(w, &ev, yaml_mapping_end_event_initialize(&ev));
}

static void seq_start(struct yw *w, bool flow)
{
	yaml_event_t ev;

	emit(w, &ev, yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1,
							  flow ? YAML_FLOW_SEQUENCE_STYLE : YAML_BLOCK_SEQUENCE_STYLE));
}

static void seq_end(struct yw *w)
{
	yaml_event_t ev;

	emit(w, &ev, yaml_sequence_end_event_initialize(&ev));
}

/* Whether a plain scalar s would be read as something other than a string
 * (YAML 1.1 and 1.2 core schemas: null, booleans, yes/no/on/off, numbers,
 * .inf/.nan, and the empty string). */
static bool resolves_to_non_string(const char *s)
{
	static const char *const words[] = { "null", "~", "true", "false", "yes", "no", "on", "off", "y", "n" };

	if (!*s)
		return true;
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		if (!strcasecmp(s, words[i]))
			return true;
	}
	return isdigit((unsigned char)s[0]) || s[0] == '+' || s[0] == '-' || s[0] == '.';
}

static void scalar(struct yw *w, const char *s, yaml_scalar_style_t style, bool plain_ok)
{
	yaml_event_t ev;

	emit(w, &ev, yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)strlen(s), plain_ok, 1, style));
}

/* A string, read back as a string whatever it holds. */
static void str(struct yw *w, const char *s)
{
	if (resolves_to_non_string(s))
		scalar(w, s, YAML_DOUBLE_QUOTED_SCALAR_STYLE, false);
	else
		scalar(w, s, YAML_ANY_SCALAR_STYLE, true);
}

static void integer(struct yw *w, long long v)
{
	char t[32];

	snprintf(t, sizeof(t), "%lld", v);
	scalar(w, t, YAML_PLAIN_SCALAR_STYLE, true);
}

static void boolean(struct yw *w, bool v)
{
	scalar(w, v ? "true" : "false", YAML_PLAIN_SCALAR_STYLE, true);
}

static void kv_str(struct yw *w, const char *k, const char *v)
{
	str(w, k);
	str(w, v);
}

static void kv_int(struct yw *w, const char *k, long long v)
{
	str(w, k);
	integer(w, v);
}

/* Starts file b: the plan's head, then note as a comment, then the YAML
 * writer w over it. 0, or the first failure. */
static int file_start(struct yw *w, struct gpushare_buf *b, const char *head, const char *note)
{
	int rc = gpushare_buf_add(b, head, strlen(head));

	if (!rc)
		rc = plan_comment(b, note);
	if (!rc)
		rc = yw_open(w, b);
	return rc;
}

/* A file of the plan and the part it becomes. */
struct part {
	const char *name;
	struct gpushare_buf *b;
};

/* The files as out's parts, when rc is 0: the first is printed, the others
 * are aside (written by --out DIR only). Every buffer is released either
 * way. rc, or the first failure. */
static int parts_add(int rc, struct gpushare_plan_output *out, const struct part *parts, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!rc && !(rc = plan_output_add(out, parts[i].name, parts[i].b)))
			out->parts[out->n_parts - 1].aside = i > 0;
		gpushare_buf_release(parts[i].b);
	}
	return rc;
}

/* Open a Kubernetes object's mapping with its apiVersion, kind and
 * metadata.name (and namespace, unless NULL); the caller adds the rest and
 * closes it (map_end). */
static void k8s_object_start(struct yw *w, const char *api_version, const char *kind, const char *name, const char *ns)
{
	map_start(w);
	kv_str(w, "apiVersion", api_version);
	kv_str(w, "kind", kind);
	str(w, "metadata");
	map_start(w);
	kv_str(w, "name", name);
	if (ns)
		kv_str(w, "namespace", ns);
	map_end(w);
}

/* A Kubernetes object name (DNS-1123 subdomain, at most 63 characters
 * here so it is a label too). */
static int k8s_name(const struct gpushare_plan_options *o, const struct gpushare_plan *p, char *out, size_t len)
{
	size_t n;

	if (o->name)
		snprintf(out, len, "%s", o->name);
	else
		snprintf(out, len, "gpushare-%s-%d", gpushare_strategy_name(p->strategy), p->workers);
	n = strlen(out);
	if (!n || n > 63 || !isalnum((unsigned char)out[0]) || !isalnum((unsigned char)out[n - 1]))
		return gpushare_fail(GPUSHARE_E_INVAL,
				     "--name '%.80s' is not a Kubernetes name (1-63 lowercase letters, digits, '-', '.', "
				     "starting and ending with a letter or digit)", out);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)out[i];

		/* Each '.'-separated label starts and ends with a letter or digit
		 * (DNS-1123: "a..b" and "a-.b" are refused by the API server). */
		if (!(islower(c) || isdigit(c) || c == '-' || c == '.') ||
		    (c == '.' && (!isalnum((unsigned char)out[i - 1]) || !isalnum((unsigned char)out[i + 1]))))
			return gpushare_fail(GPUSHARE_E_INVAL,
					     "--name '%.80s' is not a Kubernetes name (1-63 lowercase letters, digits, '-', '.', "
					     "each part between dots starting and ending with a letter or digit)", out);
	}
	return 0;
}

/* The device plugin's config (version: v1, sharing.timeSlicing or
 * sharing.mps), as a document of its own. */
static void device_plugin_config(struct yw *w, const struct gpushare_plan *p)
{
	map_start(w);
	kv_str(w, "version", "v1");
	str(w, "flags");
	map_start(w);
	kv_str(w, "migStrategy", "none");
	map_end(w);
	str(w, "sharing");
	map_start(w);
	str(w, gpushare_strategy_uses_mps(p->strategy) ? "mps" : "timeSlicing");
	map_start(w);
	str(w, "failRequestsGreaterThanOne");
	boolean(w, true);
	str(w, "resources");
	seq_start(w, false);
	map_start(w);
	kv_str(w, "name", "nvidia.com/gpu");
	kv_int(w, "replicas", p->workers);
	map_end(w);
	seq_end(w);
	map_end(w);
	map_end(w);
	map_end(w);
}

/* A Kubernetes namespace (a DNS-1123 label: 1-63 lowercase letters,
 * digits and '-', starting and ending with a letter or digit). */
static int k8s_namespace_ok(const char *ns)
{
	size_t n = strlen(ns);

	if (!n || n > 63 || !isalnum((unsigned char)ns[0]) || !isalnum((unsigned char)ns[n - 1]) ||
	    strspn(ns, "abcdefghijklmnopqrstuvwxyz0123456789-") != n)
		return gpushare_fail(GPUSHARE_E_INVAL,
				     "--namespace '%.80s' is not a Kubernetes namespace (1-63 lowercase letters, digits and "
				     "'-', starting and ending with a letter or digit)", ns);
	return 0;
}

/* MPS serves at most this many clients per GPU (Volta and newer): the
 * device plugin's MPS daemon refuses more replicas
 * (k8s-device-plugin cmd/mps-control-daemon/mps/device.go, maxClients). */
#define MPS_MAX_CLIENTS 48

/* The device plugin's namespace when none is given: the one its Helm
 * chart is installed into in the plugin's README. */
#define DEVICE_PLUGIN_NAMESPACE "nvidia-device-plugin"

/* The device plugin: on stdout only the Kubernetes object, the ConfigMap
 * (in the chart's namespace); beside it, for --out DIR, the plugin's
 * config file (--config-file) and the chart's values naming the ConfigMap
 * (and, for MPS, turning on GPU Feature Discovery, whose
 * nvidia.com/mps.capable=true label the chart's MPS daemon needs). */
int plan_render_device_plugin(const struct gpushare_plan_options *o, const struct gpushare_plan *p, const char *head,
			      struct gpushare_plan_output *out)
{
	struct gpushare_buf b = { 0 }, cfg = { 0 }, file = { 0 }, values = { 0 };
	const struct part parts[] = { { "configmap.yaml", &b }, { "config.yaml", &file }, { "values.yaml", &values } };
	bool mps = gpushare_strategy_uses_mps(p->strategy);
	const char *ns = o->k8s_namespace ? o->k8s_namespace : DEVICE_PLUGIN_NAMESPACE;
	char name[80], note[1024];
	struct yw w;
	int rc;

	rc = k8s_name(o, p, name, sizeof(name));
	if (!rc)
		rc = k8s_namespace_ok(ns);
	if (rc)
		return rc;
	/* The chart refuses its release in "default" (k8s-device-plugin
	 * deployments/helm/nvidia-device-plugin/templates/validation.yml). */
	if (!strcmp(ns, "default"))
		return gpushare_fail(GPUSHARE_E_INVAL, "--namespace default: the device plugin's chart refuses to install "
						      "there (allowDefaultNamespace); the ConfigMap goes where the chart is");
	if (mps && p->workers > MPS_MAX_CLIENTS)
		return gpushare_fail(GPUSHARE_E_UNSUPPORTED,
				     "the device plugin's MPS daemon refuses more than %d replicas per GPU (MPS serves at most "
				     "%d clients) and the plan is %d: plan with --strategy timeslice, or sweep at most %d workers",
				     MPS_MAX_CLIENTS, MPS_MAX_CLIENTS, p->workers, MPS_MAX_CLIENTS);
	/* The config alone first: it is the ConfigMap's value and config.yaml. */
	rc = yw_open(&w, &cfg);
	if (!rc) {
		doc_start(&w, true);
		device_plugin_config(&w, p);
		doc_end(&w);
	}
	rc = yw_close(&w) ? w.err : rc;
	snprintf(note, sizeof(note),
		 "\nApply: kubectl apply -f configmap.yaml (the ConfigMap %s in namespace %s), then install the\n"
		 "chart into the same namespace with the values of --out DIR:\n"
		 "  helm upgrade -i nvdp nvdp/nvidia-device-plugin --namespace %s --create-namespace -f values.yaml\n"
		 "  (or --set config.name=%s%s)%s",
		 name, ns, ns, name, mps ? " --set gfd.enabled=true" : "",
		 mps ? "\nMPS: the chart starts its MPS daemon only on nodes labelled nvidia.com/mps.capable=true,\n"
		       "which GPU Feature Discovery sets (gfd.enabled, off in the chart by default)." : "");
	/* stdout and configmap.yaml: the ConfigMap, a Kubernetes object only. */
	if (!rc)
		rc = file_start(&w, &b, head, note);
	if (!rc) {
		doc_start(&w, true);
		k8s_object_start(&w, "v1", "ConfigMap", name, ns);
		str(&w, "data");
		map_start(&w);
		str(&w, "config.yaml");
		scalar(&w, gpushare_buf_str(&cfg), YAML_LITERAL_SCALAR_STYLE, false);
		map_end(&w);
		map_end(&w);
		doc_end(&w);
		rc = yw_close(&w);
	}
	/* config.yaml: the plugin's config file (--config-file). */
	if (!rc)
		rc = gpushare_buf_add(&file, head, strlen(head));
	if (!rc)
		rc = plan_comment(&file, "\nThe device plugin's config file (nvidia-device-plugin --config-file config.yaml);\n"
					 "the same config is the ConfigMap's value in configmap.yaml.");
	if (!rc)
		rc = gpushare_buf_add(&file, gpushare_buf_str(&cfg), cfg.len);
	/* values.yaml: the chart's values. */
	if (!rc)
		rc = file_start(&w, &values, head,
				"\nThe nvidia-device-plugin Helm chart's values: helm upgrade -i ... -f values.yaml");
	if (!rc) {
		doc_start(&w, true);
		map_start(&w);
		str(&w, "config");
		map_start(&w);
		kv_str(&w, "name", name);
		map_end(&w);
		if (mps) {
			str(&w, "gfd");
			map_start(&w);
			str(&w, "enabled");
			boolean(&w, true);
			map_end(&w);
		}
		map_end(&w);
		doc_end(&w);
		rc = yw_close(&w);
	}
	gpushare_buf_release(&cfg);
	return parts_add(rc, out, parts, sizeof(parts) / sizeof(parts[0]));
}

/* A CEL string literal of s ("..."), when s is printable ASCII other than
 * '"' and '\\'; else false (no selector is written). */
static bool cel_string(const char *s, char *out, size_t len)
{
	size_t n = strlen(s);

	if (!n || n + 3 > len)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < 0x20 || s[i] > 0x7e || s[i] == '"' || s[i] == '\\')
			return false;
	}
	snprintf(out, len, "\"%s\"", s);
	return true;
}

/* The DRA driver's feature gate of the plan's sharing: Alpha, off by
 * default, since driver 25.8 (k8s-dra-driver-gpu pkg/featuregates/
 * featuregates.go); without it every claim with this GpuConfig is refused
 * (api/nvidia.com/resource/v1beta1/validate.go). */
static const char *dra_gate(bool mps)
{
	return mps ? "MPSSupport" : "TimeSlicingSettings";
}

/* The devices of a DRA claim: one request of the driver's device class
 * (with a selector, unless expr is NULL) and the GpuConfig of the plan. */
static void dra_devices(struct yw *w, const struct gpushare_plan *p, const char *expr)
{
	bool mps = gpushare_strategy_uses_mps(p->strategy);
	char q[32];

	str(w, "devices");
	map_start(w);
	str(w, "requests");
	seq_start(w, false);
	map_start(w);
	kv_str(w, "name", "gpu");
	str(w, "exactly");
	map_start(w);
	kv_str(w, "deviceClassName", "gpu.nvidia.com");
	if (expr) {
		/* The driver's attribute of the GPU's name
		 * (cmd/gpu-kubelet-plugin/deviceinfo.go, productName). */
		str(w, "selectors");
		seq_start(w, false);
		map_start(w);
		str(w, "cel");
		map_start(w);
		kv_str(w, "expression", expr);
		map_end(w);
		map_end(w);
		seq_end(w);
	}
	map_end(w);
	map_end(w);
	seq_end(w);
	str(w, "config");
	seq_start(w, false);
	map_start(w);
	str(w, "requests");
	seq_start(w, true);
	str(w, "gpu");
	seq_end(w);
	str(w, "opaque");
	map_start(w);
	kv_str(w, "driver", "gpu.nvidia.com");
	str(w, "parameters");
	map_start(w);
	kv_str(w, "apiVersion", "resource.nvidia.com/v1beta1");
	kv_str(w, "kind", "GpuConfig");
	str(w, "sharing");
	map_start(w);
	kv_str(w, "strategy", mps ? "MPS" : "TimeSlicing");
	if (mps && (p->thread_percentage || p->mem_limit_bytes)) {
		str(w, "mpsConfig");
		map_start(w);
		if (p->thread_percentage)
			kv_int(w, "defaultActiveThreadPercentage", p->thread_percentage);
		if (p->mem_limit_bytes) {
			plan_quantity((unsigned long long)p->mem_limit_bytes, q, sizeof(q));
			kv_str(w, "defaultPinnedDeviceMemoryLimit", q);
		}
		map_end(w);
	} else if (!mps) {
		str(w, "timeSlicingConfig");
		map_start(w);
		kv_str(w, "interval", "Default");
		map_end(w);
	}
	map_end(w); /* sharing */
	map_end(w); /* parameters */
	map_end(w); /* opaque */
	map_end(w); /* config[0] */
	seq_end(w);
	map_end(w); /* devices */
}

/* One container of an example pod: the site's image and command, the
 * claim. */
static void example_container(struct yw *w, const char *name)
{
	map_start(w);
	kv_str(w, "name", name);
	kv_str(w, "image", "nvcr.io/nvidia/cuda:12.8.1-base-ubuntu24.04");
	str(w, "command");
	seq_start(w, true);
	str(w, "nvidia-smi");
	str(w, "-L");
	seq_end(w);
	str(w, "resources");
	map_start(w);
	str(w, "claims");
	seq_start(w, false);
	map_start(w);
	kv_str(w, "name", "gpu");
	map_end(w);
	seq_end(w);
	map_end(w);
	map_end(w);
}

/* An example pod of `containers` containers naming the claim: the
 * ResourceClaim called claim (shared), else the template called claim. */
static void example_pod(struct yw *w, const char *claim, const char *pod, const char *ns, int containers, bool shared)
{
	k8s_object_start(w, "v1", "Pod", pod, ns);
	str(w, "spec");
	map_start(w);
	kv_str(w, "restartPolicy", "Never");
	str(w, "resourceClaims");
	seq_start(w, false);
	map_start(w);
	kv_str(w, "name", "gpu");
	kv_str(w, shared ? "resourceClaimName" : "resourceClaimTemplateName", claim);
	map_end(w);
	seq_end(w);
	str(w, "containers");
	seq_start(w, false);
	for (int i = 0; i < containers; i++) {
		char cn[32];

		snprintf(cn, sizeof(cn), "worker-%d", i);
		example_container(w, cn);
	}
	seq_end(w);
	map_end(w); /* spec */
	map_end(w);
}

/* The DRA driver: the ResourceClaimTemplate (the GpuConfig of the plan,
 * a selector for the measured GPU model) and an example pod whose K
 * containers share the one claim; beside them, for --out DIR, the chart's
 * values that turn on what the claim needs. */
int plan_render_dra(const struct gpushare_plan_options *o, const struct gpushare_plan *p, const char *head,
		    struct gpushare_plan_output *out)
{
	struct gpushare_buf b = { 0 }, values = { 0 }, shared = { 0 };
	const struct part parts[] = { { "resourceclaimtemplate.yaml", &b }, { "values.yaml", &values },
				      { "shared-claim.yaml", &shared } };
	bool mps = gpushare_strategy_uses_mps(p->strategy);
	char name[80], pod[96], cel[160], expr[256], note[1024];
	bool selector = p->gpu_model[0] && cel_string(p->gpu_model, cel, sizeof(cel));
	struct yw w;
	int rc;

	rc = k8s_name(o, p, name, sizeof(name));
	if (!rc && o->k8s_namespace)
		rc = k8s_namespace_ok(o->k8s_namespace);
	if (rc)
		return rc;
	if (mps && p->workers > MPS_MAX_CLIENTS)
		return gpushare_fail(GPUSHARE_E_UNSUPPORTED,
				     "MPS serves at most %d clients per GPU and the plan is %d: plan with --strategy timeslice, "
				     "or sweep at most %d workers", MPS_MAX_CLIENTS, p->workers, MPS_MAX_CLIENTS);
	/* The driver sets whole MiB (the limit / 1Mi, refused when 0:
	 * api/nvidia.com/resource/v1beta1/sharing.go, Megabyte). */
	if (mps && p->mem_limit_bytes && p->mem_limit_bytes < 1024 * 1024)
		return gpushare_fail(GPUSHARE_E_UNSUPPORTED,
				     "the DRA driver refuses a pinned memory limit under 1Mi (%llu bytes): it sets whole MiB",
				     (unsigned long long)p->mem_limit_bytes);
	snprintf(pod, sizeof(pod), "%.60s-pod", name);
	snprintf(expr, sizeof(expr), "device.attributes[\"gpu.nvidia.com\"].productName == %s", selector ? cel : "\"\"");
	snprintf(note, sizeof(note),
		 "#\n# Needs: Kubernetes 1.34 or later (resource.k8s.io/v1) and the NVIDIA DRA driver for GPUs 25.8 or\n"
		 "# later installed with GPU resources on and the %s feature gate (Alpha, off by default;\n"
		 "# without it the driver refuses every claim with this config). The chart's values of --out DIR:\n"
		 "#   helm upgrade -i nvidia-dra-driver-gpu nvidia/nvidia-dra-driver-gpu \\\n"
		 "#     --namespace nvidia-dra-driver-gpu --create-namespace -f values.yaml\n"
		 "#   (or --set gpuResourcesEnabledOverride=true --set featureGates.%s=true)\n"
		 "# The K=%d processes that share one GPU are K containers of one pod naming this\n"
		 "# claim (a template gives each pod a claim, and so a GPU, of its own): %s below,\n"
		 "# whose image and command are the site's to set.\n",
		 dra_gate(mps), dra_gate(mps), p->workers, pod);
	if (!rc)
		rc = gpushare_buf_add(&b, head, strlen(head));
	if (!rc)
		rc = gpushare_buf_add(&b, note, strlen(note));
	if (!rc && !selector)
		rc = plan_comment(&b, "The results name no GPU model a selector can match: the claim takes any NVIDIA GPU.");
	if (!rc)
		rc = yw_open(&w, &b);
	if (rc) {
		gpushare_buf_release(&b);
		return rc;
	}
	doc_start(&w, true);
	k8s_object_start(&w, "resource.k8s.io/v1", "ResourceClaimTemplate", name, o->k8s_namespace);
	str(&w, "spec");
	map_start(&w);
	str(&w, "spec");
	map_start(&w);
	dra_devices(&w, p, selector ? expr : NULL);
	map_end(&w); /* spec.spec */
	map_end(&w); /* spec */
	map_end(&w);
	doc_end(&w);
	/* The example pod: K containers, one claim. */
	doc_start(&w, false);
	example_pod(&w, name, pod, o->k8s_namespace, p->workers, false);
	doc_end(&w);
	rc = yw_close(&w);
	/* values.yaml: the chart's values. */
	if (!rc)
		rc = file_start(&w, &values, head,
				"\nThe nvidia-dra-driver-gpu Helm chart's values: helm upgrade -i ... -f values.yaml\n"
				"(GPU resources are refused by the chart without gpuResourcesEnabledOverride; the\n"
				"node must not also run the device plugin for the same GPUs).");
	if (!rc) {
		doc_start(&w, true);
		map_start(&w);
		str(&w, "gpuResourcesEnabledOverride");
		boolean(&w, true);
		str(&w, "featureGates");
		map_start(&w);
		str(&w, dra_gate(mps));
		boolean(&w, true);
		map_end(&w);
		map_end(&w);
		doc_end(&w);
		rc = yw_close(&w);
	}
	/* shared-claim.yaml: the other way the driver shares a GPU, one
	 * ResourceClaim that K pods name (a claim may be reserved for several
	 * pods: the processes then are K pods of one container). */
	if (!rc)
		rc = gpushare_buf_add(&shared, head, strlen(head));
	if (!rc)
		rc = gpushare_buf_add(&shared, note, strlen(note));
	if (!rc)
		rc = plan_comment(&shared, "Instead of the template and its pod: one ResourceClaim shared by K pods of one\n"
					   "container each (kubectl apply -f shared-claim.yaml; the pods start wherever the\n"
					   "claim's GPU is).");
	if (!rc)
		rc = yw_open(&w, &shared);
	if (!rc) {
		doc_start(&w, true);
		k8s_object_start(&w, "resource.k8s.io/v1", "ResourceClaim", name, o->k8s_namespace);
		str(&w, "spec");
		map_start(&w);
		dra_devices(&w, p, selector ? expr : NULL);
		map_end(&w);
		map_end(&w);
		doc_end(&w);
		for (int i = 0; i < p->workers; i++) {
			snprintf(pod, sizeof(pod), "%.60s-%d", name, i);
			doc_start(&w, false);
			example_pod(&w, name, pod, o->k8s_namespace, 1, true);
			doc_end(&w);
		}
		rc = yw_close(&w);
	}
	return parts_add(rc, out, parts, sizeof(parts) / sizeof(parts[0]));
}

int plan_render_mig_parted(const struct gpushare_plan_options *o, const struct gpushare_plan *p, const char *head,
			   struct gpushare_plan_output *out)
{
	struct gpushare_buf b = { 0 };
	char name[80], note[512];
	struct plan_mig_layout l = { .n = 0 };
	const char *const *ids = NULL;
	struct yw w;
	int rc;

	if (!p->mig_layout.n)
		return gpushare_fail(GPUSHARE_E_UNSUPPORTED, "mig-parted needs results of the 'mig' strategy");
	/* The layout as measured: every profile with its count. */
	for (; l.n < p->mig_layout.n && l.n < sizeof(l.profile) / sizeof(l.profile[0]); l.n++) {
		l.profile[l.n] = p->mig_layout.profile[l.n];
		l.count[l.n] = p->mig_layout.count[l.n];
	}
	/* Placeable on the measured GPU, and for that model only. */
	rc = plan_mig_check(p->gpu_model, &l, &ids);
	if (rc)
		return rc;
	if (o->name) {
		size_t n = strlen(o->name);

		if (!n || n >= sizeof(name) || strspn(o->name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != n)
			return gpushare_fail(GPUSHARE_E_INVAL,
					     "--name '%.80s' is not a mig-parted config name (1-79 letters, digits, '.', '_', '-')",
					     o->name);
		snprintf(name, sizeof(name), "%s", o->name);
	} else if (l.n == 1) {
		snprintf(name, sizeof(name), "gpushare-all-%s", l.profile[0]);
	} else {
		/* "gpushare-1g.10gbx2-2g.20gbx1-3g.40gbx1" */
		snprintf(name, sizeof(name), "gpushare");
		for (size_t i = 0; i < l.n; i++)
			gpushare_str_catf(name, sizeof(name), "-%sx%d", l.profile[i], l.count[i]);
	}
	/* The name is the user's: through the comment writer, so it stays a comment. */
	snprintf(note, sizeof(note),
		 "\ngpushare never changes a MIG layout; apply this one yourself:\n  nvidia-mig-parted apply -f FILE -c %s%s",
		 name, ids ? "\nThe device-filter names the measured GPU model's PCI device IDs: other models keep their layout."
			   : "\nThe measured GPU is not in gpushare's table of MIG placement rules: the layout is unchecked "
			     "and, without a device-filter, for every GPU.");
	rc = file_start(&w, &b, head, note);
	if (rc) {
		gpushare_buf_release(&b);
		return rc;
	}
	doc_start(&w, true);
	map_start(&w);
	kv_str(&w, "version", "v1");
	str(&w, "mig-configs");
	map_start(&w);
	str(&w, name);
	seq_start(&w, false);
	map_start(&w);
	if (ids) {
		str(&w, "device-filter");
		seq_start(&w, true);
		for (size_t i = 0; ids[i]; i++)
			str(&w, ids[i]);
		seq_end(&w);
	}
	kv_str(&w, "devices", "all");
	str(&w, "mig-enabled");
	boolean(&w, true);
	str(&w, "mig-devices");
	map_start(&w);
	for (size_t i = 0; i < l.n; i++)
		kv_int(&w, l.profile[i], l.count[i]);
	map_end(&w);
	map_end(&w);
	seq_end(&w);
	map_end(&w);
	map_end(&w);
	doc_end(&w);
	rc = yw_close(&w);
	if (!rc)
		rc = plan_output_add(out, "mig-parted.yaml", &b);
	gpushare_buf_release(&b);
	return rc;
}
