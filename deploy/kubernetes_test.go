package deploy

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rackstream/rackstream/config"
)

// The values the downward API and the init container would supply in a
// sample pod; the tests load the configuration with them.
const (
	samplePod       = "rackstream-4"
	sampleNamespace = "rackstream"
	sampleZone      = "eu-central-1b"
	sampleNode      = "node-b-1"
)

func defaultHTTPPort(t *testing.T) string {
	t.Helper()
	cfg, err := config.Load(config.Sources{Set: []string{"application.id=a", "bootstrap.servers=127.0.0.1:9092"}})
	if err != nil {
		t.Fatal(err)
	}
	_, port, err := net.SplitHostPort(cfg.HTTP.Listen)
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// TestEveryManifestParses reads every YAML file under deploy/ and checks
// that each Kubernetes object names its apiVersion, kind and name.
func TestEveryManifestParses(t *testing.T) {
	for _, dir := range []string{"kubernetes", "prometheus"} {
		for _, f := range yamlFiles(t, dir) {
			docs := readYAMLFile(t, f)
			if len(docs) == 0 {
				t.Errorf("%s: no document", f)
			}
			if !strings.HasPrefix(f, "kubernetes/") {
				continue
			}
			for i, d := range docs {
				if str(d, "apiVersion") == "" || str(d, "kind") == "" {
					t.Errorf("%s: document %d has no apiVersion or kind", f, i+1)
				}
				if str(d, "kind") != "Kustomization" && str(d, "metadata", "name") == "" {
					t.Errorf("%s: %s without metadata.name", f, str(d, "kind"))
				}
			}
		}
	}
}

// pod gathers what the variant tests look at.
type pod struct {
	objs      []object
	sts       object
	spec      map[string]any // the pod template's spec
	labels    map[string]any // the pod template's labels
	container map[string]any // the rackstream container
	env       []any
	port      int64 // the container's http port
}

func loadVariant(t *testing.T, dir string) pod {
	t.Helper()
	objs := build(t, dir)
	sts := the(t, objs, "StatefulSet", "")
	p := pod{
		objs:   objs,
		sts:    sts,
		spec:   mapping(sts.m, "spec", "template", "spec"),
		labels: mapping(sts.m, "spec", "template", "metadata", "labels"),
	}
	p.container = named(list(p.spec, "containers"), "rackstream")
	if p.container == nil {
		t.Fatalf("%s: no container named rackstream", sts)
	}
	p.env = list(p.container, "env")
	http := named(list(p.container, "ports"), "http")
	p.port, _ = get(http, "containerPort").(int64)
	if p.port == 0 {
		t.Fatalf("%s: no container port named http", sts)
	}
	return p
}

// fieldRef returns the downward-API field an env entry reads, or "".
func fieldRef(e map[string]any) string { return str(e, "valueFrom", "fieldRef", "fieldPath") }

// resolveEnv turns the container's env into NAME=value strings as the
// kubelet would for the sample pod: literal values with $(VAR) expanded
// from earlier entries, downward-API fields from the sample values. A
// reference to an optional Secret is left out; a required one resolves to
// sampleSecret(name, key), as if the operator had created the Secret.
func (p pod) resolveEnv(t *testing.T) []string {
	t.Helper()
	vals := map[string]string{}
	var out []string
	for _, e := range p.env {
		m := e.(map[string]any)
		name := str(m, "name")
		var v string
		switch f := fieldRef(m); {
		case f == "metadata.name":
			v = samplePod
		case f == "metadata.namespace":
			v = sampleNamespace
		case f == "spec.nodeName":
			v = sampleNode
		case f == "metadata.labels['topology.kubernetes.io/zone']":
			v = sampleZone // as PodTopologyLabels copies it from the node
		case strings.HasPrefix(f, "metadata.labels['"):
			label := strings.TrimSuffix(strings.TrimPrefix(f, "metadata.labels['"), "']")
			v, _ = p.labels[label].(string)
		case f != "":
			t.Fatalf("env %s: unexpected fieldRef %s", name, f)
		case get(m, "valueFrom", "secretKeyRef") != nil:
			ref := mapping(m, "valueFrom", "secretKeyRef")
			if ref["optional"] == true {
				continue
			}
			v = sampleSecret(str(ref, "name"), str(ref, "key"))
		default:
			v = expandKubeVars(str(m, "value"), vals)
		}
		vals[name] = v
		out = append(out, name+"="+v)
	}
	return out
}

// sampleSecret is the value the tests give a required Secret's key.
func sampleSecret(name, key string) string { return "sample-" + name + "-" + key }

// expandKubeVars applies Kubernetes' $(VAR) expansion: a reference to a
// defined variable is replaced, $$ is a literal $, anything else is kept.
func expandKubeVars(s string, vars map[string]string) string {
	return regexp.MustCompile(`\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)`).ReplaceAllStringFunc(s, func(ref string) string {
		if ref == "$$" {
			return "$"
		}
		if v, ok := vars[ref[2:len(ref)-1]]; ok {
			return v
		}
		return ref
	})
}

// configPath returns the --config argument of the container's command.
func (p pod) configPath(t *testing.T) string {
	t.Helper()
	cmd := list(p.container, "command")
	if len(cmd) == 0 {
		cmd = nil
		for _, a := range dockerImage(t).entrypoint {
			cmd = append(cmd, a)
		}
	}
	for i, a := range cmd {
		if a == "--config" && i+1 < len(cmd) {
			return cmd[i+1].(string)
		}
	}
	t.Fatalf("%s: the container runs %v, with no --config", p.sts, cmd)
	return ""
}

// properties returns the shared properties file of the ConfigMap.
func (p pod) properties(t *testing.T) string {
	t.Helper()
	cm := the(t, p.objs, "ConfigMap", "rackstream-config")
	s := str(cm.m, "data", "rackstream.properties")
	if s == "" {
		t.Fatalf("%s has no rackstream.properties", cm)
	}
	return s
}

// mountedAt returns the volume name mounted at dir in container c, "" for none.
func mountedAt(c map[string]any, dir string) string {
	for _, m := range list(c, "volumeMounts") {
		if str(m, "mountPath") == dir {
			return str(m, "name")
		}
	}
	return ""
}

// effectiveConfig loads the configuration an instance of the sample pod
// runs with: the file its --config names (for the init-container variant,
// the file node-labels.sh writes, checked by TestNodeLabelsScript) and the
// container's environment.
func (p pod) effectiveConfig(t *testing.T, dir string) *config.Config {
	t.Helper()
	props := p.properties(t)
	if strings.HasSuffix(dir, "init-container") {
		props += "\nclient.tag.zone=" + sampleZone + "\n"
	}
	file := filepath.Join(t.TempDir(), "rackstream.properties")
	if err := os.WriteFile(file, []byte(props), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(config.Sources{File: file, Env: p.resolveEnv(t)})
	if err != nil {
		t.Fatalf("the pod's configuration does not load:\n%v", err)
	}
	for _, w := range cfg.Warnings() {
		t.Errorf("configuration warning: %s", w)
	}
	return cfg
}

func TestKubernetes(t *testing.T) {
	for _, dir := range variants {
		t.Run(filepath.Base(dir), func(t *testing.T) { testVariant(t, dir) })
	}
}

func testVariant(t *testing.T, dir string) {
	p := loadVariant(t, dir)
	sts := p.sts
	podSel := mapping(sts.m, "spec", "selector", "matchLabels")
	if !selects(podSel, p.labels) {
		t.Fatalf("%s: selector %v does not select its own pods %v", sts, podSel, p.labels)
	}

	t.Run("pods spread evenly over zones", func(t *testing.T) {
		var zone map[string]any
		for _, c := range list(p.spec, "topologySpreadConstraints") {
			if str(c, "topologyKey") == "topology.kubernetes.io/zone" {
				zone = c.(map[string]any)
			}
		}
		if zone == nil {
			t.Fatal("no topologySpreadConstraints entry over topology.kubernetes.io/zone")
		}
		if zone["maxSkew"] != int64(1) || zone["whenUnsatisfiable"] != "DoNotSchedule" {
			t.Errorf("zone spread maxSkew=%v whenUnsatisfiable=%v, want 1 and DoNotSchedule", zone["maxSkew"], zone["whenUnsatisfiable"])
		}
		if !selects(mapping(zone, "labelSelector", "matchLabels"), p.labels) {
			t.Errorf("the zone spread's labelSelector does not select the pods")
		}
		if r, _ := get(sts.m, "spec", "replicas").(int64); r < 3 {
			t.Errorf("replicas %d: fewer than three zones' worth", r)
		}
	})

	t.Run("application.server is the pod's stable DNS name", func(t *testing.T) {
		svcName := str(sts.m, "spec", "serviceName")
		svc := the(t, p.objs, "Service", svcName)
		if str(svc.m, "spec", "clusterIP") != "None" {
			t.Errorf("%s is not headless (clusterIP: None)", svc)
		}
		if !selects(mapping(svc.m, "spec", "selector"), p.labels) {
			t.Errorf("%s does not select the pods", svc)
		}
		if get(svc.m, "spec", "publishNotReadyAddresses") != true {
			t.Errorf("%s: restoring instances must be reachable by name: publishNotReadyAddresses: true", svc)
		}
		cfg := p.effectiveConfig(t, dir)
		want := fmt.Sprintf("%s.%s.%s.svc.cluster.local:%d", samplePod, svcName, sampleNamespace, p.port)
		if cfg.ApplicationServer != want {
			t.Errorf("application.server = %q, want %q", cfg.ApplicationServer, want)
		}
		if src := cfg.Source("application.server"); src.Kind != config.FromEnv {
			t.Errorf("application.server comes from %v, want the pod's environment", src)
		}
	})

	t.Run("client tags are the pod's zone and cluster", func(t *testing.T) {
		cfg := p.effectiveConfig(t, dir)
		if got := cfg.ClientTags.Value("zone"); got != sampleZone {
			t.Errorf("client.tag.zone = %q, want the node's zone %q", got, sampleZone)
		}
		if got := cfg.ClientRack(); got != sampleZone {
			t.Errorf("client.rack = %q, want the zone %q (client.rack.tag)", got, sampleZone)
		}
		cluster, _ := p.labels["rackstream.io/cluster"].(string)
		if cluster == "" || cfg.ClientTags.Value("cluster") != cluster {
			t.Errorf("client.tag.cluster = %q, want the pod label rackstream.io/cluster %q", cfg.ClientTags.Value("cluster"), cluster)
		}
		for _, k := range cfg.Placement.RackAwareAssignmentTags {
			if cfg.ClientTags.Value(k) == "" {
				t.Errorf("rack.aware.assignment.tags names %s, which no pod sets", k)
			}
		}
		zoneEnv := named(p.env, "RACKSTREAM_CLIENT_TAG_ZONE")
		switch filepath.Base(dir) {
		case "downward-api":
			if fieldRef(zoneEnv) != "metadata.labels['topology.kubernetes.io/zone']" {
				t.Errorf("RACKSTREAM_CLIENT_TAG_ZONE = %v, want the downward API's metadata.labels['topology.kubernetes.io/zone']", zoneEnv)
			}
		case "init-container":
			if zoneEnv != nil {
				t.Errorf("RACKSTREAM_CLIENT_TAG_ZONE is set (%v): it would override the zone the init container writes", zoneEnv)
			}
			testInitContainer(t, p)
		}
	})

	t.Run("every RACKSTREAM_ variable sets a configuration key", func(t *testing.T) {
		for _, e := range p.env {
			name := str(e, "name")
			if !strings.HasPrefix(name, config.EnvPrefix) {
				continue
			}
			if key, ok := config.KeyForEnv(name); !ok {
				t.Errorf("env %s sets no configuration key", name)
			} else {
				t.Logf("%s sets %s", name, key)
			}
		}
	})

	t.Run("state.dir is on a persistent volume claim", func(t *testing.T) {
		cfg := p.effectiveConfig(t, dir)
		vol := mountedAt(p.container, cfg.StateDir)
		if vol == "" {
			t.Fatalf("nothing is mounted at state.dir %s", cfg.StateDir)
		}
		claim := named(claimTemplates(sts.m), vol)
		if claim == nil {
			t.Fatalf("volume %s at state.dir is not a volumeClaimTemplate", vol)
		}
		if modes := list(claim, "spec", "accessModes"); len(modes) != 1 || modes[0] != "ReadWriteOnce" {
			t.Errorf("claim %s accessModes %v, want [ReadWriteOnce]", vol, modes)
		}
		if str(claim, "spec", "resources", "requests", "storage") == "" {
			t.Errorf("claim %s requests no storage", vol)
		}
		for _, v := range list(p.spec, "volumes") {
			if str(v, "name") == vol {
				t.Errorf("volume %s is also a pod volume, which would shadow the claim", vol)
			}
		}
	})

	t.Run("probes: readiness on /readyz, liveness on /healthz", func(t *testing.T) {
		for probe, path := range map[string]string{"readinessProbe": "/readyz", "livenessProbe": "/healthz"} {
			h := mapping(p.container, probe, "httpGet")
			if str(h, "path") != path || (h["port"] != "http" && h["port"] != p.port) {
				t.Errorf("%s = %v, want httpGet %s on the http port", probe, h, path)
			}
		}
	})

	t.Run("HTTP listens on the container, probe and scrape port", func(t *testing.T) {
		cfg := p.effectiveConfig(t, dir)
		_, port, err := net.SplitHostPort(cfg.HTTP.Listen)
		if err != nil || port != strconv.FormatInt(p.port, 10) {
			t.Errorf("http.listen %q, want port %d (containerPort http)", cfg.HTTP.Listen, p.port)
		}
		ann := mapping(sts.m, "spec", "template", "metadata", "annotations")
		if ann["prometheus.io/scrape"] != "true" || ann["prometheus.io/port"] != strconv.FormatInt(p.port, 10) || ann["prometheus.io/path"] != "/metrics" {
			t.Errorf("scrape annotations %v, want scrape \"true\", port \"%d\", path /metrics", ann, p.port)
		}
		for _, svc := range p.objs {
			if svc.kind() != "Service" {
				continue
			}
			for _, sp := range list(svc.m, "spec", "ports") {
				if tp := get(sp, "targetPort"); tp != "http" && tp != p.port {
					t.Errorf("%s targets port %v, not the http port", svc, tp)
				}
			}
		}
	})

	t.Run("the HTTP token comes from a required Secret, so run starts", func(t *testing.T) {
		e := named(p.env, config.EnvName("http.auth.token"))
		ref := mapping(e, "valueFrom", "secretKeyRef")
		if ref == nil || str(ref, "name") != "rackstream-http" || str(ref, "key") != "http.auth.token" || ref["optional"] == true {
			t.Fatalf("env %s = %v, want a required secretKeyRef to rackstream-http, key http.auth.token", config.EnvName("http.auth.token"), e)
		}
		props, _ := config.ParseProperties([]byte(p.properties(t)))
		for _, pr := range props {
			if pr.Key == "http.auth.token" {
				t.Errorf("the ConfigMap sets http.auth.token on line %d: the token belongs in the Secret", pr.Line)
			}
		}
		cfg := p.effectiveConfig(t, dir)
		if got := cfg.HTTP.AuthToken.Reveal(); got != sampleSecret("rackstream-http", "http.auth.token") {
			t.Errorf("http.auth.token = %q, want the Secret's value", got)
		}
		if err := cfg.HTTP.CheckExposure(); err != nil {
			t.Errorf("rackstream run would refuse the pod's configuration: %v", err)
		}
		if cfg.HTTP.LoopbackOnly() {
			t.Errorf("http.listen %s is loopback-only: probes and peers could not reach it", cfg.HTTP.Listen)
		}
	})

	t.Run("termination grace outlasts shutdown.timeout.ms", func(t *testing.T) {
		cfg := p.effectiveConfig(t, dir)
		grace, _ := get(p.spec, "terminationGracePeriodSeconds").(int64)
		// The kubelet's clock starts at SIGTERM; leave a few seconds for
		// the process to exit after the shutdown bound.
		if grace*1000 < cfg.ShutdownTimeout.Milliseconds()+5000 {
			t.Errorf("terminationGracePeriodSeconds %d, want at least shutdown.timeout.ms (%d ms) + 5 s", grace, cfg.ShutdownTimeout.Milliseconds())
		}
	})

	t.Run("a disruption budget covers the pods", func(t *testing.T) {
		pdb := the(t, p.objs, "PodDisruptionBudget", "")
		if str(pdb.m, "apiVersion") != "policy/v1" {
			t.Errorf("%s apiVersion %s, want policy/v1", pdb, str(pdb.m, "apiVersion"))
		}
		if !selects(mapping(pdb.m, "spec", "selector", "matchLabels"), p.labels) {
			t.Errorf("%s does not select the pods", pdb)
		}
		if get(pdb.m, "spec", "maxUnavailable") != int64(1) {
			t.Errorf("%s maxUnavailable %v, want 1", pdb, get(pdb.m, "spec", "maxUnavailable"))
		}
	})

	t.Run("it runs the image's binary, non-root, read-only", func(t *testing.T) {
		img := dockerImage(t)
		cmd := list(p.container, "command")
		if len(cmd) < 2 || cmd[0] != img.binary() || cmd[1] != "run" {
			t.Errorf("command %v, want [%s run --config ...]", cmd, img.binary())
		}
		cfgFile := p.configPath(t)
		if mountedAt(p.container, filepath.Dir(cfgFile)) == "" {
			t.Errorf("--config %s: nothing is mounted at %s", cfgFile, filepath.Dir(cfgFile))
		}
		if get(p.spec, "securityContext", "runAsNonRoot") != true {
			t.Error("pod securityContext lacks runAsNonRoot: true")
		}
		if uid, _ := get(p.spec, "securityContext", "runAsUser").(int64); uid == 0 || !strings.HasPrefix(img.user, strconv.FormatInt(uid, 10)) {
			t.Errorf("runAsUser %d, want the image's user %s", uid, img.user)
		}
		for _, c := range append(list(p.spec, "containers"), list(p.spec, "initContainers")...) {
			sc := mapping(c, "securityContext")
			if sc["readOnlyRootFilesystem"] != true || sc["allowPrivilegeEscalation"] != false {
				t.Errorf("container %s: securityContext %v, want readOnlyRootFilesystem and no privilege escalation", str(c, "name"), sc)
			}
		}
		if get(p.spec, "automountServiceAccountToken") != false {
			t.Error("the pod mounts a service account token into every container")
		}
	})
}

// claimTemplates returns the volumeClaimTemplates with their metadata.name
// also as "name", for named.
func claimTemplates(sts map[string]any) []any {
	var out []any
	for _, c := range list(sts, "spec", "volumeClaimTemplates") {
		m := map[string]any{"name": str(c, "metadata", "name")}
		for k, v := range c.(map[string]any) {
			m[k] = v
		}
		out = append(out, m)
	}
	return out
}

// testInitContainer checks the init-container variant's plumbing: the
// script's ConfigMap, the file it writes and the container reads, and the
// narrow role it reads the node with.
func testInitContainer(t *testing.T, p pod) {
	t.Helper()
	ic := named(list(p.spec, "initContainers"), "node-labels")
	if ic == nil {
		t.Fatal("no init container node-labels")
	}
	env := list(ic, "env")
	if fieldRef(named(env, "NODE_NAME")) != "spec.nodeName" {
		t.Errorf("init container NODE_NAME = %v, want the downward API's spec.nodeName", named(env, "NODE_NAME"))
	}
	// The script runs from the generated ConfigMap.
	cmd := list(ic, "command")
	if len(cmd) != 2 || cmd[0] != "/bin/sh" {
		t.Fatalf("init container command %v, want [/bin/sh script]", cmd)
	}
	script := cmd[1].(string)
	vol := mountedAt(ic, filepath.Dir(script))
	v := named(list(p.spec, "volumes"), vol)
	cm := the(t, p.objs, "ConfigMap", str(v, "configMap", "name"))
	if _, ok := mapping(cm.m, "data")[filepath.Base(script)]; !ok {
		t.Errorf("%s has no %s", cm, filepath.Base(script))
	}
	// It writes where the main container reads, from where the ConfigMap is.
	out := p.configPath(t)
	if mountedAt(ic, filepath.Dir(out)) == "" || mountedAt(ic, filepath.Dir(out)) != mountedAt(p.container, filepath.Dir(out)) {
		t.Errorf("the init container and rackstream do not share %s", filepath.Dir(out))
	}
	if mountedAt(ic, "/etc/rackstream") != "config" {
		t.Errorf("the init container does not mount the shared properties at /etc/rackstream")
	}
	// Only the init container has the API token.
	const saDir = "/var/run/secrets/kubernetes.io/serviceaccount"
	if mountedAt(ic, saDir) == "" {
		t.Error("the init container has no service account token")
	}
	if mountedAt(p.container, saDir) != "" {
		t.Error("the rackstream container has the service account token it does not need")
	}
	// The role: get on nodes, nothing else, bound to the pods' account.
	role := the(t, p.objs, "ClusterRole", "")
	rules := list(role.m, "rules")
	want := map[string]string{"apiGroups": `[""]`, "resources": `["nodes"]`, "verbs": `["get"]`}
	if len(rules) != 1 {
		t.Fatalf("%s has %d rules, want one: get on nodes", role, len(rules))
	}
	for k, w := range want {
		if got := quoteList(list(rules[0], k)); got != w {
			t.Errorf("%s %s = %s, want %s", role, k, got, w)
		}
	}
	if len(mapping(rules[0])) != 3 {
		t.Errorf("%s rule %v has more than apiGroups, resources and verbs", role, rules[0])
	}
	binding := the(t, p.objs, "ClusterRoleBinding", "")
	if str(binding.m, "roleRef", "name") != role.name() || str(binding.m, "roleRef", "kind") != "ClusterRole" {
		t.Errorf("%s does not bind %s", binding, role)
	}
	sa := the(t, p.objs, "ServiceAccount", str(p.spec, "serviceAccountName"))
	subj := list(binding.m, "subjects")
	if len(subj) != 1 || str(subj[0], "kind") != "ServiceAccount" || str(subj[0], "name") != sa.name() || str(subj[0], "namespace") != str(sa.m, "metadata", "namespace") {
		t.Errorf("%s subjects %v, want only the pods' ServiceAccount %s", binding, subj, sa.name())
	}
}

func quoteList(l []any) string {
	q := make([]string, len(l))
	for i, v := range l {
		q[i] = strconv.Quote(fmt.Sprint(v))
	}
	return "[" + strings.Join(q, ", ") + "]"
}
