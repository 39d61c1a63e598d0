package config

import (
	"path/filepath"
	"runtime"
	"testing"
)

func TestStateDirDefaultsToTheUsersCacheDirectory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the XDG variables are Linux's") // os.UserCacheDir reads others elsewhere
	}
	for _, tc := range []struct {
		name, xdg, home, want, source string
	}{
		{"XDG_CACHE_HOME", "/srv/cache", "/home/u", "/srv/cache/rackstream", "default (the user's cache directory)"},
		{"the home directory", "", "/home/u", "/home/u/.cache/rackstream", "default (the user's cache directory)"},
		{"the container images' setting", "/var/lib", "/home/nonroot", "/var/lib/rackstream", "default (the user's cache directory)"},
		{"no home directory", "", "", "rackstream-state", "default (no home directory: the working directory)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("XDG_CACHE_HOME", tc.xdg)
			t.Setenv("HOME", tc.home)
			c := mustLoad(t, Sources{Set: required})
			if c.StateDir != filepath.FromSlash(tc.want) || c.Source("state.dir").String() != tc.source {
				t.Errorf("state.dir %q from %s, want %q from %s", c.StateDir, c.Source("state.dir"), tc.want, tc.source)
			}
			c = mustLoad(t, Sources{Set: append([]string{"state.dir=/data/rs"}, required...)})
			if c.StateDir != "/data/rs" {
				t.Errorf("a set state.dir: %q", c.StateDir)
			}
		})
	}
}
