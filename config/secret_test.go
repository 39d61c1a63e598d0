package config

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// secretKeys returns the table's secret keys; the test fails when there are
// none, so that the tests iterating over them cannot pass vacuously.
func secretKeys(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, d := range keys {
		if d.secret {
			out = append(out, d.name)
		}
	}
	if len(out) == 0 {
		t.Fatal("the key table marks no key secret")
	}
	return out
}

func TestIsSecret(t *testing.T) {
	// The table decides for its keys ...
	for _, d := range keys {
		if IsSecret(d.name) != d.secret {
			t.Errorf("IsSecret(%q) = %v, but the table says %v", d.name, !d.secret, d.secret)
		}
	}
	// ... and a name that looks secret is masked outside it.
	for key, want := range map[string]bool{
		"sasl.pasword": false, "http.auth.tokens": true, "ssl.keystore.password.x": true, "client.tag.password": true,
		"my.client.secret": true, "sasl.jaas.confg": true, "my.private.key": true, "PASSWORD": true,
		"state.dirs": false, "client.tag.zone": false,
	} {
		if d := lookup(key); d != nil {
			t.Fatalf("%s is in the table: pick a name outside it", key)
		}
		if IsSecret(key) != want {
			t.Errorf("IsSecret(%q) = %v, want %v", key, !want, want)
		}
	}
}

// TestSecretKeysHaveSecretFields: a key marked secret stores its value in a
// field of type Secret (which masks itself wherever it is printed), and a
// Secret field belongs to a key marked secret.
func TestSecretKeysHaveSecretFields(t *testing.T) {
	var c Config
	secretAt := map[uintptr]bool{}
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		for i := range v.NumField() {
			f := v.Field(i)
			switch {
			case f.Type() == reflect.TypeFor[Secret]():
				secretAt[f.Addr().Pointer()] = true
			case f.Kind() == reflect.Struct && v.Type().Field(i).IsExported():
				walk(f)
			}
		}
	}
	walk(reflect.ValueOf(&c).Elem())
	for _, d := range keys {
		if at := reflect.ValueOf(d.field(&c)).Pointer(); secretAt[at] != d.secret {
			t.Errorf("%s: secret %v, but its field's type is Secret: %v", d.name, d.secret, secretAt[at])
		}
	}
}

// secretMarker is the value, or part of the value, that must never appear.
const secretMarker = "Zq9-s3cr3t-Zq9"

// secretOutputs returns everything a user or a log could see of a load of
// src: every error, every warning, the effective configuration in each
// form, and a log line of it.
func secretOutputs(src Sources) (text string, errs Errors) {
	var out bytes.Buffer
	c, err := Load(src)
	if err != nil {
		fmt.Fprintln(&out, err)
		if !errors.As(err, &errs) {
			fmt.Fprintln(&out, "not config.Errors")
		}
		for _, e := range errs {
			fmt.Fprintf(&out, "%v %+v %#v\n", e, e, e)
		}
		return out.String(), errs
	}
	for _, w := range c.Warnings() {
		fmt.Fprintln(&out, w)
	}
	_ = c.WriteEffective(&out)
	fmt.Fprintf(&out, "%v %+v %#v %s\n", c, c, c, *c)
	slog.New(slog.NewJSONHandler(&out, nil)).Info("cfg", "config", c, "security", c.Security, "http", c.HTTP)
	slog.New(slog.NewTextHandler(&out, nil)).Info("cfg", "config", *c)
	return out.String(), nil
}

// TestEverySecretKeyIsHiddenFromEverySource sets each secret key of the
// table from each source, well and badly formed, and looks for its value in
// everything Load lets anyone see.
func TestEverySecretKeyIsHiddenFromEverySource(t *testing.T) {
	all := secretKeys(t)
	// Kafka's passwords that Rackstream ignores are never shown either.
	for k, kk := range kafkaKeys() {
		if known, _ := kafkaLookup(k); known && kk.secret && lookup(k) == nil {
			all = append(all, k, "producer."+k)
		}
	}
	for _, key := range all {
		v := secretMarker
		type attempt struct {
			name    string
			src     Sources
			wantErr string // a substring of the errors; "" when the load may succeed
		}
		file := func(lines ...string) string { return writeFile(t, append(slices.Clone(required), lines...)...) }
		attempts := []attempt{
			{name: "file", src: Sources{File: file(key + "=" + v)}},
			{name: "file, set twice", src: Sources{File: file(key+"="+v, key+"="+v+"2")}},
			{name: "file, beside an error", src: Sources{File: file(key+"="+v, "num.standby.replicas=-1")}, wantErr: "num.standby.replicas"},
			{name: "file, bad \\u escape", src: Sources{File: file(key + "=abc" + v + `\uZZZZ`)}, wantErr: key + ": malformed"},
			{name: "file, short \\u escape", src: Sources{File: file(key + "=" + v + `\u12`)}, wantErr: key + ": malformed"},
			{name: "file, escape in the key", src: Sources{File: file(key + `\u00=` + v)}, wantErr: "of the key"},
			{name: "file, colon", src: Sources{File: file(key + ":" + v)}},
			{name: "env", src: Sources{Env: append(envOf(required), EnvName(key)+"="+v)}},
			{name: "env, misspelt name", src: Sources{Env: append(envOf(required), EnvName(key)+"S="+v)}},
			{name: "set", src: Sources{Set: append(slices.Clone(required), key+"="+v)}},
			{name: "set with a colon", src: Sources{Set: append(slices.Clone(required), key+":"+v)}, wantErr: "--set"},
			{name: "set with a space", src: Sources{Set: append(slices.Clone(required), key+" "+v)}, wantErr: "--set"},
			{name: "set without separator", src: Sources{Set: append(slices.Clone(required), key+v)}, wantErr: "--set"},
			{name: "set, value only", src: Sources{Set: append(slices.Clone(required), v)}, wantErr: "--set"},
			{name: "set, misspelt key", src: Sources{Set: append(slices.Clone(required), key+"x="+v)}, wantErr: "unknown configuration key"},
		}
		for _, a := range attempts {
			text, errs := secretOutputs(a.src)
			if strings.Contains(text, v) {
				t.Errorf("%s from %s: the value leaked:\n%s", key, a.name, text)
			}
			if a.wantErr != "" && (errs == nil || !strings.Contains(errs.Error(), a.wantErr)) {
				t.Errorf("%s from %s: errors %v, want one about %q", key, a.name, errs, a.wantErr)
			}
		}
	}
}

// envOf turns key=value pairs into their environment variables.
func envOf(kvs []string) []string {
	out := make([]string, len(kvs))
	for i, kv := range kvs {
		k, v, _ := strings.Cut(kv, "=")
		out[i] = EnvName(k) + "=" + v
	}
	return out
}

// TestABadSetArgumentShowsOnlyWhatIsNotSecret: an argument without '=' is
// quoted after a key that is not secret, so that a typo stays easy to find.
func TestABadSetArgumentShowsOnlyWhatIsNotSecret(t *testing.T) {
	for arg, want := range map[string]string{
		"num.standby.replicas:2":    `flag --set: --set "num.standby.replicas:2": want key=value`,
		"client.tag.zone:z1":        `flag --set: --set "client.tag.zone:z1": want key=value`,
		"sasl.password":             `flag --set: --set "sasl.password": want key=value`,
		"sasl.password:" + "hunter": `flag --set: --set "sasl.password" followed by a value not shown (a secret): want key=value`,
		"hunter2":                   `flag --set: --set argument 1 (not shown: it may hold a secret): want key=value`,
	} {
		errs := loadErrors(t, Sources{Set: []string{arg}})
		if !slices.Contains(errs, want) {
			t.Errorf("--set %q: errors %q, want %q", arg, errs, want)
		}
	}
}
