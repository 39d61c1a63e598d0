package deploy

import (
	"bufio"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestReleaseQuick runs `make release` for one platform, this machine's (the
// quick form of the three-platform release), and checks what it ships: a
// static binary that says which commit it is, a SHA256SUMS that matches it,
// and the image definition next to it naming exactly that binary.
func TestReleaseQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the release build compiles everything again with -trimpath")
	}
	needTools(t, "make release runs the release script", "make")
	dist := t.TempDir()
	platform := runtime.GOOS + "/" + runtime.GOARCH
	cmd := exec.Command("make", "-C", "..", "release", "PLATFORMS="+platform, "DIST="+dist)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make release: %v\n%s", err, out)
	}
	name := "rackstream-" + runtime.GOOS + "-" + runtime.GOARCH
	bin := filepath.Join(dist, name)

	t.Run("SHA256SUMS names and matches the binary", func(t *testing.T) {
		sums := readSums(t, filepath.Join(dist, "SHA256SUMS"))
		if len(sums) != 1 {
			t.Fatalf("SHA256SUMS has %d lines, want 1: %v", len(sums), sums)
		}
		b, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		got := sha256.Sum256(b)
		if sums[name] != hex.EncodeToString(got[:]) {
			t.Errorf("SHA256SUMS says %s for %s, the file hashes to %x", sums[name], name, got)
		}
	})

	t.Run("the binary is static", func(t *testing.T) {
		if runtime.GOOS != "linux" {
			t.Skipf("ELF checks on linux only (this is %s)", runtime.GOOS)
		}
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Error("the binary has a dynamic loader (PT_INTERP): not static")
			}
		}
		if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
			t.Errorf("the binary needs shared libraries %v", libs)
		}
	})

	t.Run("version names the commit", func(t *testing.T) {
		out, err := exec.Command(bin, "version").Output()
		if err != nil {
			t.Fatalf("%s version: %v", name, err)
		}
		v := string(out)
		t.Logf("%s version:\n%s", name, v)
		// The go command stamps VCS data when the module's directory has a
		// .git directory (a clone, as in CI); from a git worktree (.git is
		// a file) it stamps nothing, and the binary says unknown.
		if fi, err := os.Stat("../.git"); err == nil && fi.IsDir() {
			head := gitOut(t, "rev-parse", "HEAD")
			if !strings.Contains(v, "revision: "+head+"\n") {
				t.Errorf("version does not name HEAD %s", head)
			}
			if strings.Contains(v, "time:     unknown") {
				t.Error("version has no commit time")
			}
		} else if !strings.Contains(v, "revision: unknown\n") {
			t.Errorf("built from a worktree or without .git, yet the revision is not unknown")
		}
		for _, w := range []string{"rackstream ", "go:       go1.", "platform: " + platform + "\n"} {
			if !strings.Contains(v, w) {
				t.Errorf("version lacks %q", w)
			}
		}
	})

	t.Run("the image copies the binary of its platform", func(t *testing.T) {
		df := filepath.Join(dist, "Dockerfile")
		img := imageOf(t, df)
		if len(img.copies) == 0 {
			t.Fatalf("%s copies nothing", df)
		}
		// The build arguments buildx sets per --platform.
		src := strings.NewReplacer("${TARGETOS}", "linux", "${TARGETARCH}", runtime.GOARCH).Replace(img.copies[0].src)
		if runtime.GOOS == "linux" && src != name {
			t.Errorf("the image copies %s (%s for this platform), make release built %s", img.copies[0].src, src, name)
		}
		if len(img.entrypoint) == 0 || img.copies[0].dst != img.entrypoint[0] {
			t.Errorf("the binary goes to %s, the entrypoint runs %v", img.copies[0].dst, img.entrypoint)
		}
		for _, c := range img.copies[1:] {
			if _, err := os.Stat(filepath.Join(dist, c.src)); err != nil {
				t.Errorf("COPY %s: not in the release directory: %v", c.src, err)
			}
		}
	})
}

func readSums(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sums := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, file, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("%s: line %q is not 'SUM  FILE'", path, sc.Text())
		}
		sums[file] = sum
	}
	return sums
}

func gitOut(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", args...).Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}
