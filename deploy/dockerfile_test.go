package deploy

import (
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// instruction is one Dockerfile instruction as BuildKit's parser reads it.
type instruction struct {
	line   int
	cmd    string   // upper-case: FROM, RUN, COPY...
	flags  []string // --from=build, --chown=...
	values []string // the arguments, exec-form (JSON) elements one each
	json   bool     // written in exec (JSON) form
	args   string   // flags and values joined by spaces
}

type stage struct {
	image, name string
	ins         []instruction
}

// readDockerfile parses a Dockerfile (path relative to deploy/) with
// BuildKit's parser, the one `docker build` runs, and splits it into
// stages.
func readDockerfile(t *testing.T, file string) []stage {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := parser.Parse(f)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	for _, w := range res.Warnings {
		t.Errorf("%s:%d: %s", file, w.Location.Start.Line, w.Short)
	}
	var stages []stage
	for _, n := range res.AST.Children {
		in := instruction{line: n.StartLine, cmd: strings.ToUpper(n.Value), flags: n.Flags, json: n.Attributes["json"]}
		for v := n.Next; v != nil; v = v.Next {
			in.values = append(in.values, v.Value)
		}
		in.args = strings.Join(append(slices.Clone(in.flags), in.values...), " ")
		if in.cmd == "FROM" {
			st := stage{image: in.values[0]}
			if len(in.values) == 3 && strings.EqualFold(in.values[1], "AS") {
				st.name = in.values[2]
			}
			stages = append(stages, st)
			continue
		}
		if len(stages) == 0 {
			if in.cmd != "ARG" {
				t.Fatalf("%s:%d: %s before any FROM", file, in.line, in.cmd)
			}
			continue
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

// copied is one source and destination of a COPY.
type copied struct{ src, dst string }

// image describes the image a Dockerfile builds, for the manifests' tests.
type image struct {
	copies     []copied // the final stage's COPYs (single source each)
	fromStage  []bool   // copies[i] is COPY --from a stage
	entrypoint []string // exec form
	exposed    []string
	user       string
}

// binary is where the image's rackstream binary is: the copy named
// rackstream.
func (img image) binary() string {
	for _, c := range img.copies {
		if path.Base(c.dst) == "rackstream" {
			return c.dst
		}
	}
	return ""
}

func imageOf(t *testing.T, file string) image {
	t.Helper()
	stages := readDockerfile(t, file)
	final := stages[len(stages)-1]
	var img image
	for _, in := range final.all("COPY") {
		if len(in.values) != 2 {
			t.Fatalf("%s:%d: COPY %s: want one source and a destination", file, in.line, in.args)
		}
		img.copies = append(img.copies, copied{in.values[0], in.values[1]})
		img.fromStage = append(img.fromStage, slices.ContainsFunc(in.flags, func(f string) bool { return strings.HasPrefix(f, "--from=") }))
	}
	if eps := final.all("ENTRYPOINT"); len(eps) > 0 {
		ep := eps[len(eps)-1]
		if !ep.json {
			t.Fatalf("%s:%d: ENTRYPOINT is not in exec (JSON) form", file, ep.line)
		}
		img.entrypoint = ep.values
	}
	for _, in := range final.all("EXPOSE") {
		img.exposed = append(img.exposed, in.values...)
	}
	if us := final.all("USER"); len(us) > 0 {
		img.user = us[len(us)-1].args
	}
	return img
}

// dockerImage describes the image the repository's Dockerfile builds.
func dockerImage(t *testing.T) image {
	t.Helper()
	return imageOf(t, "../Dockerfile")
}

func TestDockerfile(t *testing.T) {
	stages := readDockerfile(t, "../Dockerfile")
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
		if img.binary() == "" || !img.fromStage[0] {
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

	checkRuntimeImage(t, "../Dockerfile")
}

// TestReleaseDockerfile: the release image (deploy/release/Dockerfile,
// built from `make release`'s binaries) runs like the source-built one.
func TestReleaseDockerfile(t *testing.T) {
	stages := readDockerfile(t, "release/Dockerfile")
	if len(stages) != 1 || !strings.HasPrefix(stages[0].image, "gcr.io/distroless/static") {
		t.Fatalf("stages %v, want one, FROM gcr.io/distroless/static*: the release image compiles nothing", stages)
	}
	for _, in := range stages[0].all("RUN") {
		t.Errorf("release/Dockerfile:%d: RUN in a shell-less image: %s", in.line, in.args)
	}
	img := imageOf(t, "release/Dockerfile")
	if len(img.copies) == 0 || img.copies[0].src != "rackstream-${TARGETOS}-${TARGETARCH}" {
		t.Errorf("COPY %v: want the binary of the build's platform first, rackstream-${TARGETOS}-${TARGETARCH}", img.copies)
	}
	checkRuntimeImage(t, "release/Dockerfile")
}

// checkRuntimeImage checks what the Kubernetes manifests rely on in an
// image: a numeric non-root user, the HTTP port exposed, and an entrypoint
// of rackstream run --config FILE.
func checkRuntimeImage(t *testing.T, file string) {
	img := imageOf(t, file)
	t.Run("it runs as a non-root user", func(t *testing.T) {
		user := img.user
		uid, _, _ := strings.Cut(user, ":")
		if user == "" || uid == "0" || uid == "root" {
			t.Errorf("%s: runtime USER %q, want a non-root user", file, user)
		}
		if !regexp.MustCompile(`^[1-9]\d*(:\d+)?$`).MatchString(user) {
			// Kubernetes' runAsNonRoot can only verify a numeric user.
			t.Errorf("%s: USER %q: want a numeric uid, which runAsNonRoot can check", file, user)
		}
	})

	t.Run("it exposes the HTTP port and runs rackstream run --config", func(t *testing.T) {
		port := defaultHTTPPort(t)
		if len(img.exposed) != 1 || strings.TrimSuffix(img.exposed[0], "/tcp") != port {
			t.Errorf("%s: EXPOSE %v, want %s (http.listen's default)", file, img.exposed, port)
		}
		want := []string{img.binary(), "run", "--config"}
		if img.binary() == "" || len(img.entrypoint) != 4 || strings.Join(img.entrypoint[:3], " ") != strings.Join(want, " ") || !strings.HasPrefix(img.entrypoint[3], "/") {
			t.Errorf("%s: ENTRYPOINT %q, want [%s run --config /absolute/path]", file, img.entrypoint, img.binary())
		}
	})
}

// TestDockerignoreKeepsTheBuildInputs pins that the build context has what
// the builder needs and not the repository's history or build outputs. The
// file is read and matched with moby/patternmatcher, the code docker and
// BuildKit use for .dockerignore.
func TestDockerignoreKeepsTheBuildInputs(t *testing.T) {
	f, err := os.Open("../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	patterns, err := ignorefile.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		t.Fatal(err)
	}
	ignored := func(p string) bool {
		m, err := pm.MatchesOrParentMatches(p)
		if err != nil {
			t.Fatalf(".dockerignore against %s: %v", p, err)
		}
		return m
	}
	for _, keep := range []string{"go.mod", "go.sum", "cmd/rackstream/main.go", "config/config.go", "processor/runtime.go", "config/kclient/kclient.go"} {
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
