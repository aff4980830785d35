package web

import "testing"

// TestNiceScale checks the chart's scale: steps of 1, 2 or 5 times a
// power of ten, and a top that holds the highest bar.
func TestNiceScale(t *testing.T) {
	tests := []struct {
		top, step, ymax float64
	}{
		{0.01, 0.005, 0.01},
		{0.0123, 0.005, 0.015},
		{1, 0.5, 1},
		{3.2, 1, 4},
		{7.9, 2, 8},
		{12, 5, 15},
		{0.00042, 0.0002, 0.0006},
	}
	for _, tt := range tests {
		step, ymax := niceScale(tt.top)
		if !near(step, tt.step) || !near(ymax, tt.ymax) {
			t.Errorf("niceScale(%v) = %v, %v; want %v, %v", tt.top, step, ymax, tt.step, tt.ymax)
		}
	}
}

func near(a, b float64) bool { return a-b < 1e-12 && b-a < 1e-12 }

// TestAxisLabels checks the dollar labels' decimals.
func TestAxisLabels(t *testing.T) {
	for _, tt := range []struct {
		v, step float64
		want    string
	}{{0, 1, "$0"}, {0, 0.1, "$0"}, {2, 1, "$2"}, {0.5, 0.5, "$0.50"}, {0.3, 0.1, "$0.30"}, {0.015, 0.005, "$0.015"}, {10, 5, "$10"}} {
		if got := dollarsAxis(tt.v, tt.step); got != tt.want {
			t.Errorf("dollarsAxis(%v, %v) = %q, want %q", tt.v, tt.step, got, tt.want)
		}
	}
}
