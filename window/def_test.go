package window

import (
	"errors"
	"slices"
	"testing"
)

// fields returns the fields named by the *FieldErrors joined in err.
func fields(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var out []string
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		var fe *FieldError
		if !errors.As(e, &fe) {
			t.Fatalf("error is not a *FieldError: %v", e)
		}
		out = append(out, fe.Field)
	}
	walk(err)
	return out
}

func TestValidateNamesEveryFieldAtFault(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want []string
	}{
		{"a tumbling window of one minute is valid", Tumbling(60_000).Validate(), nil},
		{"a hopping window advancing by its size is valid", Hopping(10, 10).WithGrace(5).Validate(), nil},
		{"a zero size is refused, and only the size is named", Tumbling(0).Validate(), []string{"size.ms"}},
		{"an advance larger than the size is refused", Hopping(10, 11).Validate(), []string{"advance.ms"}},
		{"a zero advance is refused", Hopping(10, 0).Validate(), []string{"advance.ms"}},
		{"a negative grace is refused", Tumbling(10).WithGrace(-1).Validate(), []string{"grace.ms"}},
		{"a size beyond MaxDuration is refused", Tumbling(MaxDuration + 1).Validate(), []string{"size.ms"}},
		{"every fault is named at once", TimeWindows{Size: 10, Advance: 0, Grace: -1}.Validate(), []string{"advance.ms", "grace.ms"}},
		{"a sliding window of one ms is valid", Sliding(1).Validate(), nil},
		{"a sliding window of zero time difference is refused", Sliding(0).Validate(), []string{"size.ms"}},
		{"a sliding window with negative grace is refused", Sliding(5).WithGrace(-3).Validate(), []string{"grace.ms"}},
		{"a session gap of zero is refused", Session(0).Validate(), []string{"gap.ms"}},
		{"a session gap and grace both wrong are both named", Session(-1).WithGrace(-1).Validate(), []string{"gap.ms", "grace.ms"}},
		{"a session with grace is valid", Session(30_000).WithGrace(1000).Validate(), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fields(t, tt.err); !slices.Equal(got, tt.want) {
				t.Fatalf("fields at fault = %v, want %v (%v)", got, tt.want, tt.err)
			}
		})
	}
}

func TestRetentionMustCoverWindowAndGrace(t *testing.T) {
	tests := []struct {
		name      string
		retention int64
		min       int64
		want      []string
	}{
		{"tumbling: size plus grace exactly is enough", 70, Tumbling(60).WithGrace(10).MinRetention(), nil},
		{"tumbling: one ms short is refused", 69, Tumbling(60).WithGrace(10).MinRetention(), []string{"retention.ms"}},
		{"sliding: twice the time difference plus grace", 25, Sliding(10).WithGrace(5).MinRetention(), nil},
		{"sliding: size plus grace is not enough", 15, Sliding(10).WithGrace(5).MinRetention(), []string{"retention.ms"}},
		{"session: gap plus grace", 15, Session(10).WithGrace(5).MinRetention(), nil},
		{"a zero retention is refused", 0, 0, []string{"retention.ms"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fields(t, ValidateRetention(tt.retention, tt.min)); !slices.Equal(got, tt.want) {
				t.Fatalf("fields at fault = %v, want %v", got, tt.want)
			}
		})
	}
}
