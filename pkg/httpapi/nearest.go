package httpapi

import (
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/udsproject/uds/pkg/uds"
)

// A 404 names the served route nearest to the request, so that a typo
// (quotas for quota, a segment too many or too few, the seed's
// /rest/rest/api/...) answers with what was probably meant. Nearness is an
// edit distance over path segments: a segment missing, extra or wrong
// costs 1, a literal segment misspelt by at most half its characters costs
// the share that differ (quotas for quota: 1/6), a parameter takes any one
// segment for nothing ({applicationUuid} only a UUID) and {sortKey...} any
// number, and another method costs a half: the path says more about the
// resource meant than the method. The route table is small, so every 404
// weighs every route.
const (
	// suggestMaxSegments bounds the work on a path: no route has half as
	// many segments, so a longer path is near none of them.
	suggestMaxSegments = 16
	// suggestMaxCost is the distance from which a route is too far to
	// offer: two wrong segments, or one and another method and a
	// misspelling.
	suggestMaxCost = 2.0
	// methodCost is what another method adds.
	methodCost = 0.5
	// echoMaxBytes bounds how much of the client's method and path a 404
	// repeats.
	echoMaxBytes = 200
)

// fullRouteSegments holds each route's whole path split into segments,
// the base path's included, so that a mistake there is weighed too.
var fullRouteSegments = func() [][]string {
	base := strings.Split(strings.TrimPrefix(BasePath, "/"), "/")
	out := make([][]string, len(routes))
	for i := range routes {
		out[i] = append(slices.Clip(base), routeSegments[i]...)
	}
	return out
}()

// nearestRoute returns the served route nearest to a request for method
// and escapedPath, as "METHOD path" in the OpenAPI document's form, or ""
// when no route is near.
func nearestRoute(groups Group, method, escapedPath string) string {
	segs := strings.Split(strings.TrimSuffix(strings.TrimPrefix(escapedPath, "/"), "/"), "/")
	if len(segs) > suggestMaxSegments {
		return ""
	}
	if method == http.MethodHead {
		method = http.MethodGet
	}
	var appsBuf [suggestMaxSegments]bool
	apps := appsBuf[:len(segs)]
	for j, s := range segs {
		_, err := uds.ParseApp(s)
		apps[j] = err == nil
	}
	best, bestCost := "", suggestMaxCost
	for i, rt := range routes {
		if rt.group&groups == 0 {
			continue
		}
		cost := segmentDistance(fullRouteSegments[i], segs, apps)
		m := method
		if rt.methods[method] == nil {
			// The route's first method in alphabetical order, so that the
			// answer does not depend on map order.
			m = slices.Sorted(maps.Keys(rt.methods))[0]
			cost += methodCost
		}
		if cost < bestCost {
			best, bestCost = m+" "+routePaths[i], cost
		}
	}
	return best
}

// segmentDistance is the edit distance between a route's segments and a
// path's, as nearestRoute weighs them; apps[j] says whether segs[j] is an
// application UUID.
func segmentDistance(pattern, segs []string, apps []bool) float64 {
	// prev[j] is the distance between the pattern's first i segments and
	// the path's first j, cur[j] the same for i+1.
	var prevBuf, curBuf [suggestMaxSegments + 1]float64
	prev, cur := prevBuf[:len(segs)+1], curBuf[:len(segs)+1]
	for j := range prev {
		prev[j] = float64(j)
	}
	for i, p := range pattern {
		rest := strings.HasSuffix(p, "...}")
		cur[0] = float64(i + 1)
		for j, s := range segs {
			d := min(prev[j+1]+1, cur[j]+1, prev[j]+segmentCost(p, s, apps[j]))
			if rest {
				// The rest of the path takes one segment more.
				d = min(d, cur[j])
			}
			cur[j+1] = d
		}
		prev, cur = cur, prev
	}
	return prev[len(segs)]
}

// segmentCost weighs a path segment against one of a pattern: nothing for
// the same literal or a parameter that takes it, the share of characters
// that differ for a literal misspelt by at most half of them, otherwise 1.
func segmentCost(p, s string, app bool) float64 {
	switch {
	case p == "{applicationUuid}":
		if app {
			return 0
		}
		return 1
	case strings.HasPrefix(p, "{") || p == s:
		return 0
	}
	longer := max(len(p), len(s))
	if d := editDistance(p, s, longer/2+1); 2*d <= longer {
		return float64(d) / float64(longer)
	}
	return 1
}
