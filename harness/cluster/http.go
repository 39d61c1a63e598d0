package cluster

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/rackstream/rackstream/assignor"
)

// HTTPClient is the client of the helpers: a short timeout, so that a
// frozen or cut instance fails a request instead of hanging the test.
var HTTPClient = &http.Client{Timeout: 5 * time.Second}

// GetJSON GETs url and decodes a 200 answer's JSON into v (when not nil).
func GetJSON(url string, v any) (int, error) {
	return getJSON(HTTPClient, url, v)
}

func getJSON(c *http.Client, url string, v any) (int, error) {
	resp, err := c.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if v != nil && resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(b, v); err != nil {
			return resp.StatusCode, fmt.Errorf("%s: %w (body %q)", url, err, b)
		}
	}
	return resp.StatusCode, nil
}

// Post POSTs an empty JSON body to url and returns the status and body.
func Post(url string) (int, string, error) {
	resp, err := HTTPClient.Post(url, "application/json", nil)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// JSONLogLines returns the JSON log lines in s whose msg is msg.
func JSONLogLines(s, msg string) []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// Metadata is /v1/metadata as the tests read it: the document the
// instances serve (assignor.Metadata), with the checks the tests make of it.
type Metadata struct {
	assignor.Metadata
}

// Client returns the endpoint and tags of the member with process id id
// ("" and nil when it is not a member).
func (m *Metadata) Client(id string) (endpoint string, tags map[string]string) {
	for _, c := range m.Clients {
		if c.ID == id {
			return c.Endpoint, c.Tags
		}
	}
	return "", nil
}

// SpreadProblem returns why m is not a settled placement of tasks tasks on
// clients clients with one active and standbys standbys per task in
// distinct values of tag, or "" when it is.
func (m *Metadata) SpreadProblem(tasks, clients, standbys int, tag string) string {
	if len(m.Tasks) != tasks || len(m.Clients) != clients {
		return fmt.Sprintf("%d tasks on %d clients, want %d on %d", len(m.Tasks), len(m.Clients), tasks, clients)
	}
	for _, t := range m.Tasks {
		if t.Active == "" || len(t.Standby) != standbys {
			return fmt.Sprintf("task %d: active %q, %d standbys", t.Task, t.Active, len(t.Standby))
		}
		seen := map[string]bool{}
		for _, id := range append([]string{t.Active}, t.Standby...) {
			_, tags := m.Client(id)
			seen[tags[tag]] = true
		}
		if len(seen) != 1+standbys {
			return fmt.Sprintf("task %d: replicas in %d distinct %ss, want %d", t.Task, len(seen), tag, 1+standbys)
		}
	}
	return ""
}

// WholeProblem returns why m is not a whole placement of tasks tasks on
// clients clients, or "" when it is: every task has an active, and the
// plan's own quality reports no task repeating a value in any tag
// dimension and no standby shortfall.
func (m *Metadata) WholeProblem(tasks, clients int) string {
	if len(m.Tasks) != tasks || len(m.Clients) != clients {
		return fmt.Sprintf("generation %d: %d tasks on %d clients, want %d on %d", m.Generation, len(m.Tasks), len(m.Clients), tasks, clients)
	}
	for _, t := range m.Tasks {
		if t.Active == "" {
			return fmt.Sprintf("generation %d: task %d has no active", m.Generation, t.Task)
		}
	}
	for _, d := range m.Quality.Dimensions {
		if d.TasksRepeating != 0 {
			return fmt.Sprintf("generation %d: %d tasks repeat a %s", m.Generation, d.TasksRepeating, d.Tag)
		}
	}
	if s := m.Quality.StandbyShortfall; s != 0 {
		return fmt.Sprintf("generation %d: standby shortfall %d", m.Generation, s)
	}
	return ""
}

// KeyAnswer is a /v1/stores/{store}/keys/{key} answer.
type KeyAnswer struct {
	Value    json.RawMessage `json:"value"`
	Task     int32           `json:"task"`
	ServedBy string          `json:"served_by"`
	Role     string          `json:"role"`
	Lag      int64           `json:"lag"`
	Position int64           `json:"position"`
	// Generation is the placement generation of the instance that served
	// the answer.
	Generation int32 `json:"generation"`
}

// Status is an instance's /v1/status: its readiness and local replicas.
type Status struct {
	ID         string `json:"id"`
	Generation int32  `json:"generation"`
	Ready      bool   `json:"ready"`
	Reason     string `json:"reason"`
	Replicas   []struct {
		Store string `json:"store"`
		Task  int32  `json:"task"`
		Role  string `json:"role"`
		// Lag is the changelog end minus Position; -1 when unknown.
		Lag int64 `json:"lag"`
		// Position is the replica's checkpoint: the next changelog
		// offset to read.
		Position int64  `json:"position"`
		Reason   string `json:"reason"`
	} `json:"replicas"`
}

// Scrape reads the /metrics page at url.
func Scrape(url string) (map[string]*dto.MetricFamily, error) {
	resp, err := HTTPClient.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// MetricValue returns the value of the gauge or counter series of family
// name whose labels include the given name=value pairs, and whether there
// is exactly one.
func MetricValue(fams map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	var v float64
	n := 0
next:
	for _, m := range fams[name].GetMetric() {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, l := range m.GetLabel() {
				found = found || l.GetName() == labels[i] && l.GetValue() == labels[i+1]
			}
			if !found {
				continue next
			}
		}
		n++
		v = m.GetGauge().GetValue() + m.GetCounter().GetValue() + m.GetUntyped().GetValue()
	}
	return v, n == 1
}
