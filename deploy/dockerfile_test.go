package deploy

import (
	"encoding/json"
	"os"
	"path"
	"regexp"
	"strings"
	"testing"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	line int
	cmd  string // upper-case: FROM, RUN, COPY...
	args string
}

type stage struct {
	image, name string
	ins         []instruction
}

// readDockerfile splits the root Dockerfile into stages.
func readDockerfile(t *testing.T) []stage {
	t.Helper()
	b, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var (
		stages []stage
		cur    strings.Builder
		start  int
	)
	for i, l := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(l)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		if strings.HasPrefix(trimmed, "#") { // a comment inside a continued instruction
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur.WriteString(strings.TrimSuffix(trimmed, "\\") + " ")
			continue
		}
		cur.WriteString(trimmed)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		cur.Reset()
		in := instruction{line: start, cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		if in.cmd == "FROM" {
			f := strings.Fields(in.args)
			st := stage{image: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				st.name = f[2]
			}
			stages = append(stages, st)
			continue
		}
		if len(stages) == 0 {
			t.Fatalf("Dockerfile:%d: %s before any FROM", in.line, in.cmd)
		}
		stages[len(stages)-1].ins = append(stages[len(stages)-1].ins, in)
	}
	return stages
}

func (s stage) all(cmd string) []instruction {
	var out []instruction
	for _, in := range s.ins {
		if in.cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

// image describes the image the Dockerfile builds, for the manifests' tests.
type image struct {
	binary     string   // the rackstream binary's path
	entrypoint []string // exec form
	exposed    []string
	user       string
}

func dockerImage(t *testing.T) image {
	t.Helper()
	stages := readDockerfile(t)
	final := stages[len(stages)-1]
	var img image
	for _, in := range final.all("COPY") {
		// COPY --from=build [--chown=...] /out/rackstream /usr/local/bin/rackstream
		if f := strings.Fields(in.args); strings.Contains(in.args, "--from=") && len(f) >= 3 && path.Base(f[len(f)-2]) == "rackstream" {
			img.binary = f[len(f)-1]
		}
	}
	if eps := final.all("ENTRYPOINT"); len(eps) > 0 {
		if err := json.Unmarshal([]byte(eps[len(eps)-1].args), &img.entrypoint); err != nil {
			t.Fatalf("Dockerfile:%d: ENTRYPOINT is not in exec (JSON) form: %v", eps[len(eps)-1].line, err)
		}
	}
	for _, in := range final.all("EXPOSE") {
		img.exposed = append(img.exposed, strings.Fields(in.args)...)
	}
	if us := final.all("USER"); len(us) > 0 {
		img.user = us[len(us)-1].args
	}
	return img
}

func TestDockerfile(t *testing.T) {
	stages := readDockerfile(t)
	if len(stages) < 2 {
		t.Fatalf("%d stage(s), want a multi-stage build (builder and runtime)", len(stages))
	}
	builder, final := stages[0], stages[len(stages)-1]

	t.Run("the builder is golang:1.26, the go.mod toolchain line", func(t *testing.T) {
		if builder.image != "golang:1.26" && !strings.HasPrefix(builder.image, "golang:1.26-") && !strings.HasPrefix(builder.image, "golang:1.26.") {
			t.Errorf("builder FROM %s, want golang:1.26", builder.image)
		}
		mod, err := os.ReadFile("../go.mod")
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(mod)
		if m == nil || string(m[1]) != "1.26" {
			t.Errorf("go.mod's go line is %q; the builder image must follow it", m)
		}
		if builder.name == "" {
			t.Error("the builder stage has no name (FROM ... AS name) for COPY --from")
		}
	})

	t.Run("the binary is static", func(t *testing.T) {
		var build *instruction
		for _, in := range builder.all("RUN") {
			if strings.Contains(in.args, "go build") {
				build = &in
			}
		}
		if build == nil {
			t.Fatal("no RUN go build in the builder stage")
		}
		for _, want := range []string{"CGO_ENABLED=0", "./cmd/rackstream", "-trimpath"} {
			if !strings.Contains(build.args, want) {
				t.Errorf("Dockerfile:%d: %q lacks %s", build.line, build.args, want)
			}
		}
		if _, err := os.Stat("../cmd/rackstream/main.go"); err != nil {
			t.Errorf("the build target is gone: %v", err)
		}
	})

	t.Run("the runtime image has no shell and no compiler", func(t *testing.T) {
		if !strings.HasPrefix(final.image, "gcr.io/distroless/static") && final.image != "scratch" {
			t.Errorf("runtime FROM %s, want gcr.io/distroless/static* or scratch", final.image)
		}
		for _, in := range final.all("RUN") {
			t.Errorf("Dockerfile:%d: RUN in the runtime stage (no shell there): %s", in.line, in.args)
		}
		img := dockerImage(t)
		if img.binary == "" {
			t.Fatal("the runtime stage copies no rackstream binary from the builder")
		}
		var fromBuilder bool
		for _, in := range final.all("COPY") {
			fromBuilder = fromBuilder || strings.Contains(in.args, "--from="+builder.name+" ")
		}
		if !fromBuilder {
			t.Errorf("no COPY --from=%s in the runtime stage", builder.name)
		}
	})

	t.Run("it runs as a non-root user", func(t *testing.T) {
		user := dockerImage(t).user
		uid, _, _ := strings.Cut(user, ":")
		if user == "" || uid == "0" || uid == "root" {
			t.Errorf("runtime USER %q, want a non-root user", user)
		}
		if !regexp.MustCompile(`^[1-9]\d*(:\d+)?$`).MatchString(user) {
			// Kubernetes' runAsNonRoot can only verify a numeric user.
			t.Errorf("USER %q: want a numeric uid, which runAsNonRoot can check", user)
		}
	})

	t.Run("it exposes the HTTP port and runs rackstream run --config", func(t *testing.T) {
		img := dockerImage(t)
		port := defaultHTTPPort(t)
		if len(img.exposed) != 1 || strings.TrimSuffix(img.exposed[0], "/tcp") != port {
			t.Errorf("EXPOSE %v, want %s (http.listen's default)", img.exposed, port)
		}
		want := []string{img.binary, "run", "--config"}
		if len(img.entrypoint) != 4 || strings.Join(img.entrypoint[:3], " ") != strings.Join(want, " ") || !strings.HasPrefix(img.entrypoint[3], "/") {
			t.Errorf("ENTRYPOINT %q, want [%s run --config /absolute/path]", img.entrypoint, img.binary)
		}
	})
}

// TestDockerignoreKeepsTheBuildInputs pins that the build context has what
// the builder needs and not the repository's history or build outputs.
func TestDockerignoreKeepsTheBuildInputs(t *testing.T) {
	b, err := os.ReadFile("../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			patterns = append(patterns, l)
		}
	}
	ignored := func(p string) bool {
		out := false
		for _, pat := range patterns {
			neg := strings.HasPrefix(pat, "!")
			if dockerignoreMatch(strings.TrimPrefix(pat, "!"), p) {
				out = !neg
			}
		}
		return out
	}
	for _, keep := range []string{"go.mod", "go.sum", "cmd/rackstream/main.go", "config/config.go", "processor/runtime.go", "internal/kclient/kclient.go"} {
		if ignored(keep) {
			t.Errorf(".dockerignore excludes %s, which the build needs", keep)
		}
	}
	for _, drop := range []string{".git/HEAD", "assignor/kafkaref/target/classes/x.class", "processor/processor.test"} {
		if !ignored(drop) {
			t.Errorf(".dockerignore lets %s into the build context", drop)
		}
	}
}

// dockerignoreMatch reports whether a .dockerignore pattern excludes p: a
// pattern matches the path or one of its parent directories, and "**"
// matches any number of directories.
func dockerignoreMatch(pattern, p string) bool {
	pattern = strings.Trim(path.Clean(pattern), "/")
	var match func(pat, segs []string) bool
	match = func(pat, segs []string) bool {
		if len(pat) == 0 {
			return true // a directory pattern excludes everything under it
		}
		if pat[0] == "**" {
			for i := 0; i <= len(segs); i++ {
				if match(pat[1:], segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		ok, _ := path.Match(pat[0], segs[0])
		return ok && match(pat[1:], segs[1:])
	}
	return match(strings.Split(pattern, "/"), strings.Split(p, "/"))
}
