package main

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// median of xs, NaN when empty.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	xs = slices.Clone(xs)
	slices.Sort(xs)
	if n := len(xs); n%2 == 0 {
		return (xs[n/2-1] + xs[n/2]) / 2
	}
	return xs[len(xs)/2]
}

// pairRatio is the median over rounds of a[i]/b[i], over the rounds where
// both were measured: the ratio of two systems measured side by side,
// each round under the load of its moment. NaN when no round has both.
func pairRatio(a, b []float64) float64 {
	var rs []float64
	for i := range min(len(a), len(b)) {
		if !math.IsNaN(a[i]) && !math.IsNaN(b[i]) && b[i] != 0 {
			rs = append(rs, a[i]/b[i])
		}
	}
	return median(rs)
}

// spread formats the smallest and largest of xs, "" for fewer than two.
func spread(xs []float64, format string) string {
	var ok []float64
	for _, x := range xs {
		if !math.IsNaN(x) {
			ok = append(ok, x)
		}
	}
	if len(ok) < 2 {
		return ""
	}
	return fmt.Sprintf(" ("+format+"-"+format+")", slices.Min(ok), slices.Max(ok))
}

// num formats x with format, or "-" for NaN.
func num(format string, x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "-"
	}
	return fmt.Sprintf(format, x)
}

// thousands formats a whole number with thousands separators.
func thousands(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "-"
	}
	s := fmt.Sprintf("%.0f", x)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
