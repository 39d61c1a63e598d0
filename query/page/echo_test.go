package page_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestWhatIfErrorsEchoLongInputsShortened: a refusal names the selector or
// parameter at fault, shortened: a 15 KB one is not echoed whole.
func TestWhatIfErrorsEchoLongInputsShortened(t *testing.T) {
	srv := serve(t, &fakeQuery{token: "s3cret", doc: metadataDoc})
	long := strings.Repeat("z", 15<<10)
	for _, query := range []string{
		"lose=" + long,
		"lose=zone=" + long,
		"lose=" + long + "=a",
		"lose=zone=a&" + url.QueryEscape(long) + "=1",
		"lose=zone=a&lose=" + long,
	} {
		resp, body := get(t, srv.URL+"/v1/whatif?"+query, "Authorization", "Bearer s3cret")
		var eb struct {
			Error string `json:"error"`
		}
		if err := json.Unmarshal([]byte(body), &eb); err != nil || resp.StatusCode != http.StatusBadRequest {
			t.Errorf("?%.40s...: %s %.200q, want a 400 error", query, resp.Status, body)
			continue
		}
		if len(eb.Error) > 1<<10 {
			t.Errorf("?%.40s...: the error is %d bytes: %.120s", query, len(eb.Error), eb.Error)
		}
	}
}
