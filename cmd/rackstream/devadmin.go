package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
)

// admin wraps an instance's HTTP handler with the dev routes, answered only
// to loopback clients, and never to another site's page (crossSite):
//
//	GET  /v1/dev/instances                     every instance and its state
//	POST /v1/dev/instances/{id}/kill|stop|start
func (d *devCluster) admin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, ok := strings.CutPrefix(r.URL.Path, "/v1/dev/")
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		if !loopback(r.RemoteAddr) {
			devJSON(w, http.StatusForbidden, map[string]string{"error": "the dev admin routes answer loopback clients only"})
			return
		}
		if why := crossSite(r); why != "" {
			devJSON(w, http.StatusForbidden, map[string]string{"error": "the dev admin routes refuse requests from other sites' pages (" + why + ")"})
			return
		}
		parts := strings.Split(rest, "/")
		switch {
		case len(parts) == 1 && parts[0] == "instances":
			if r.Method != http.MethodGet {
				w.Header().Set("Allow", "GET")
				devJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "use GET"})
				return
			}
			devJSON(w, http.StatusOK, d.instancesDoc())
		case len(parts) == 3 && parts[0] == "instances" && slices.Contains([]string{"kill", "stop", "start"}, parts[2]):
			if r.Method != http.MethodPost {
				w.Header().Set("Allow", "POST")
				devJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "use POST"})
				return
			}
			action, id := parts[2], parts[1]
			in := d.instance(id)
			switch {
			case in == nil:
				devJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("%v %q (ids: %s)", errNoInstance, id, d.names())})
				return
			case action != "start" && in.running() == nil:
				devJSON(w, http.StatusConflict, map[string]string{"error": in.name + " is not running"})
				return
			case action == "start" && in.running() != nil:
				devJSON(w, http.StatusConflict, map[string]string{"error": in.name + " is running"})
				return
			}
			fmt.Fprintf(d.out, "rackstream dev: %s %s (HTTP)\n", action, in.name)
			if action != "start" {
				// The instance may be the one answering: answer first.
				devJSON(w, http.StatusAccepted, map[string]string{"instance": in.name, "action": action})
				go d.act(action, in.name)
				return
			}
			if err := d.act(action, in.name); err != nil {
				devJSON(w, http.StatusConflict, map[string]string{"error": err.Error()})
				return
			}
			devJSON(w, http.StatusOK, map[string]string{"instance": in.name, "action": action})
		default:
			devJSON(w, http.StatusNotFound, map[string]string{"error": "dev routes: GET /v1/dev/instances, POST /v1/dev/instances/{id}/kill|stop|start"})
		}
	})
}

type devInstanceDoc struct {
	ID        string            `json:"id"`
	ProcessID string            `json:"process_id"`
	HTTP      string            `json:"http"`
	Tags      map[string]string `json:"tags"`
	Running   bool              `json:"running"`
	Ready     bool              `json:"ready"`
	Reason    string            `json:"reason,omitempty"`
}

func (d *devCluster) instancesDoc() []devInstanceDoc {
	var out []devInstanceDoc
	for _, in := range d.insts {
		doc := devInstanceDoc{
			ID: in.name, ProcessID: in.processID(), HTTP: in.addr,
			Tags: map[string]string{devZoneTag: in.zone, devClusterT: in.cluster},
		}
		if svc := in.running(); svc != nil {
			doc.Running = true
			doc.Ready, doc.Reason = svc.Ready()
		}
		out = append(out, doc)
	}
	return out
}

func loopback(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func devJSON(w http.ResponseWriter, code int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}
