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

/* Open a Kubernetes object's mapping with its apiVersion, kind and
 * metadata.name; the caller adds the rest and closes it (map_end). */
static void k8s_object_start(struct yw *w, const char *api_version, const char *kind, const char *name)
{
	map_start(w);
	kv_str(w, "apiVersion", api_version);
	kv_str(w, "kind", kind);
	str(w, "metadata");
	map_start(w);
	kv_str(w, "name", name);
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

int plan_render_device_plugin(const struct gpushare_plan_options *o, const struct gpushare_plan *p, const char *head,
			      struct gpushare_plan_output *out)
{
	struct gpushare_buf b = { 0 }, cfg = { 0 };
	char name[80];
	struct yw w;
	int rc;

	rc = k8s_name(o, p, name, sizeof(name));
	if (rc)
		return rc;
	/* The config alone first: it is also the ConfigMap's value. */
	rc = yw_open(&w, &cfg);
	if (!rc) {
		doc_start(&w, true);
		device_plugin_config(&w, p);
		doc_end(&w);
	}
	rc = yw_close(&w) ? w.err : rc;
	if (!rc)
		rc = gpushare_buf_add(&b, head, strlen(head));
	if (!rc)
		rc = plan_comment(&b, "\nTwo documents: the device plugin's config file (--config-file), then the same\n"
				      "config in a ConfigMap for the Helm chart (--set config.name=NAME).");
	if (!rc)
		rc = yw_open(&w, &b);
	if (!rc) {
		doc_start(&w, false);
		device_plugin_config(&w, p);
		doc_end(&w);
		doc_start(&w, false);
		k8s_object_start(&w, "v1", "ConfigMap", name);
		str(&w, "data");
		map_start(&w);
		str(&w, "config.yaml");
		scalar(&w, gpushare_buf_str(&cfg), YAML_LITERAL_SCALAR_STYLE, false);
		map_end(&w);
		map_end(&w);
		doc_end(&w);
		rc = yw_close(&w);
	}
	if (!rc)
		rc = plan_output_add(out, "device-plugin.yaml", &b);
	gpushare_buf_release(&b);
	gpushare_buf_release(&cfg);
	return rc;
}

int plan_render_dra(const struct gpushare_plan_options *o, const struct gpushare_plan *p, const char *head,
		    struct gpushare_plan_output *out)
{
	struct gpushare_buf b = { 0 };
	bool mps = gpushare_strategy_uses_mps(p->strategy);
	char name[80], q[32];
	struct yw w;
	int rc;

	rc = k8s_name(o, p, name, sizeof(name));
	if (!rc)
		rc = gpushare_buf_add(&b, head, strlen(head));
	if (!rc)
		rc = gpushare_buf_addf(&b, "#\n# The K=%d processes that share one GPU are K containers of one pod naming this\n"
					   "# claim (a template gives each pod a claim, and so a GPU, of its own).\n", p->workers);
	if (!rc)
		rc = yw_open(&w, &b);
	if (rc) {
		gpushare_buf_release(&b);
		return rc;
	}
	doc_start(&w, true);
	k8s_object_start(&w, "resource.k8s.io/v1", "ResourceClaimTemplate", name);
	str(&w, "spec");
	map_start(&w);
	str(&w, "spec");
	map_start(&w);
	str(&w, "devices");
	map_start(&w);
	str(&w, "requests");
	seq_start(&w, false);
	map_start(&w);
	kv_str(&w, "name", "gpu");
	str(&w, "exactly");
	map_start(&w);
	kv_str(&w, "deviceClassName", "gpu.nvidia.com");
	map_end(&w);
	map_end(&w);
	seq_end(&w);
	str(&w, "config");
	seq_start(&w, false);
	map_start(&w);
	str(&w, "requests");
	seq_start(&w, true);
	str(&w, "gpu");
	seq_end(&w);
	str(&w, "opaque");
	map_start(&w);
	kv_str(&w, "driver", "gpu.nvidia.com");
	str(&w, "parameters");
	map_start(&w);
	kv_str(&w, "apiVersion", "resource.nvidia.com/v1beta1");
	kv_str(&w, "kind", "GpuConfig");
	str(&w, "sharing");
	map_start(&w);
	kv_str(&w, "strategy", mps ? "MPS" : "TimeSlicing");
	if (mps && (p->thread_percentage || p->mem_limit_bytes)) {
		str(&w, "mpsConfig");
		map_start(&w);
		if (p->thread_percentage)
			kv_int(&w, "defaultActiveThreadPercentage", p->thread_percentage);
		if (p->mem_limit_bytes) {
			plan_quantity((unsigned long long)p->mem_limit_bytes, q, sizeof(q));
			kv_str(&w, "defaultPinnedDeviceMemoryLimit", q);
		}
		map_end(&w);
	} else if (!mps) {
		str(&w, "timeSlicingConfig");
		map_start(&w);
		kv_str(&w, "interval", "Default");
		map_end(&w);
	}
	map_end(&w); /* sharing */
	map_end(&w); /* parameters */
	map_end(&w); /* opaque */
	map_end(&w); /* config[0] */
	seq_end(&w);
	map_end(&w); /* devices */
	map_end(&w); /* spec.spec */
	map_end(&w); /* spec */
	map_end(&w);
	doc_end(&w);
	rc = yw_close(&w);
	if (!rc)
		rc = plan_output_add(out, "resourceclaimtemplate.yaml", &b);
	gpushare_buf_release(&b);
	return rc;
}

int plan_render_mig_parted(const struct gpushare_plan_options *o, const struct gpushare_plan *p, const char *head,
			   struct gpushare_plan_output *out)
{
	struct gpushare_buf b = { 0 };
	char name[80];
	struct yw w;
	int rc;

	if (!p->mig_profile[0])
		return gpushare_fail(GPUSHARE_E_UNSUPPORTED, "mig-parted needs results of the 'mig' strategy");
	if (o->name) {
		size_t n = strlen(o->name);

		if (!n || n >= sizeof(name) || strspn(o->name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != n)
			return gpushare_fail(GPUSHARE_E_INVAL,
					     "--name '%.80s' is not a mig-parted config name (1-79 letters, digits, '.', '_', '-')",
					     o->name);
		snprintf(name, sizeof(name), "%s", o->name);
	} else {
		snprintf(name, sizeof(name), "gpushare-all-%s", p->mig_profile);
	}
	rc = gpushare_buf_add(&b, head, strlen(head));
	if (!rc) {
		/* The name is the user's: through the comment writer, so it stays a comment. */
		char note[256];

		snprintf(note, sizeof(note),
			 "\ngpushare never changes a MIG layout; apply this one yourself:\n  nvidia-mig-parted apply -f FILE -c %s",
			 name);
		rc = plan_comment(&b, note);
	}
	if (!rc)
		rc = yw_open(&w, &b);
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
	kv_str(&w, "devices", "all");
	str(&w, "mig-enabled");
	boolean(&w, true);
	str(&w, "mig-devices");
	map_start(&w);
	kv_int(&w, p->mig_profile, p->mig_instances);
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
