package processor

import (
	"reflect"
	"testing"

	"github.com/rackstream/rackstream/assignor/balancer"
)

// TestAddBalancerStatsSumsEveryCounter: every counter of balancer.Stats is
// summed across sessions (a field added to Stats and forgotten here would
// reset whenever the client is rebuilt), and the gauge is the latest one's.
func TestAddBalancerStatsSumsEveryCounter(t *testing.T) {
	var a, b balancer.Stats
	va, vb := reflect.ValueOf(&a).Elem(), reflect.ValueOf(&b).Elem()
	for i := range va.NumField() {
		switch va.Field(i).Kind() {
		case reflect.Uint64:
			va.Field(i).SetUint(uint64(i + 1))
			vb.Field(i).SetUint(uint64(100 * (i + 1)))
		case reflect.Int:
			va.Field(i).SetInt(7)
			vb.Field(i).SetInt(9)
		case reflect.Map: // a gauge by label: the latest session's
			va.Field(i).Set(reflect.ValueOf(map[string]int{"earlier": 7}))
			vb.Field(i).Set(reflect.ValueOf(map[string]int{"latest": 9}))
		default:
			t.Fatalf("balancer.Stats.%s is a %s: teach addBalancerStats about it", va.Type().Field(i).Name, va.Field(i).Kind())
		}
	}
	got := reflect.ValueOf(addBalancerStats(a, b))
	for i := range got.NumField() {
		name := got.Type().Field(i).Name
		switch got.Field(i).Kind() {
		case reflect.Uint64:
			if want := uint64(101 * (i + 1)); got.Field(i).Uint() != want {
				t.Errorf("%s = %d, want the sum %d", name, got.Field(i).Uint(), want)
			}
		case reflect.Int:
			if got.Field(i).Int() != 9 {
				t.Errorf("%s = %d, want the latest session's 9", name, got.Field(i).Int())
			}
		case reflect.Map:
			if !reflect.DeepEqual(got.Field(i).Interface(), map[string]int{"latest": 9}) {
				t.Errorf("%s = %v, want the latest session's", name, got.Field(i).Interface())
			}
		}
	}
	if z := addBalancerStats(b, balancer.Stats{}); z.LastGenerationBytes != 9 {
		t.Errorf("a session that led no generation reset LastGenerationBytes to %d", z.LastGenerationBytes)
	}
}
