// Package page serves the placement page: a live picture, in a browser, of
// where every task of a Rackstream group runs, on every instance, and the
// what-if endpoint behind its "lose a zone" selector.
//
//	GET /  and  /ui/...        the page: HTML, CSS and three scripts embedded in
//	                           the binary (go:embed); no CDN, no build step
//	GET /v1/whatif?lose=SEL    what losing the clients SEL selects would do
//	                           (SEL: KEY=VALUE for a tag value, or a client
//	                           id; repeatable, the losses add up)
//
// Handler wraps the query server (package query): those routes are answered
// here, every other request goes to the query server unchanged. The page
// polls its own instance's /v1/metadata, which gathers the live status of
// every instance server-side: the browser only ever talks to the instance
// that served it.
//
// # What the page shows
//
// A grid, tasks as rows and instances as columns grouped by the values of
// the rack-aware tag keys (zone, then cluster), each cell the instance's
// role for the task (active, standby with its lag, warmup); the placement's
// quality per tag key; the what-if view (tasks left without any replica,
// where each lost active fails over, each instance's replica count and the
// expected cross-zone traffic after the loss); each instance's readiness,
// replica count, lag and restore progress; and the rebalances seen while the page was open.
// Instances are named by their endpoint (application.server), shortened
// while the names stay unique, as `rackstream assign --format table` names
// them; each process id is in the instances table and in the titles.
//
// # The what-if is the CLI's
//
// /v1/whatif reads this instance's /v1/metadata through the query server
// (the same authorisation, the same document a user would save) and answers
// assignor.LossOfDocument's result, the what-if of the document's own live
// placement: the one function `rackstream assign --lose SEL` calls too, so
// the page and the CLI can't disagree.
// The generation the answer was computed for is in the
// Rackstream-Generation header.
//
// # Safety
//
// Instance ids, tags and endpoints come from members' join metadata, which
// any member of the group can write: the script renders them as text only
// (textContent and attribute values, never markup). Every page response
// carries a Content-Security-Policy that allows scripts, styles and
// requests from the page's own origin only, no inline script or style, no
// framing. The static files hold no data and load without a token; the
// data requests carry the token (http.auth.token) in the Authorization
// header, entered once and kept in the tab's sessionStorage, never in a URL.
package page
