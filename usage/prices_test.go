package usage

import (
	"math"
	"strings"
	"testing"

	"github.com/mombot/mombot/assistant"
)

// The default prices are the default model's, and keep the API's cache
// factors: 5-minute writes 1.25x input, 1-hour writes 2x, reads 0.1x.
func TestDefaultPricesAreTheDefaultModels(t *testing.T) {
	if string(assistant.DefaultModel) != DefaultPricesModel {
		t.Fatalf("the default model is %s but the default prices are %s's: look its prices up and update DefaultPrices", assistant.DefaultModel, DefaultPricesModel)
	}
	p := DefaultPrices
	for name, got := range map[string][2]float64{
		"5-minute write": {p.CacheWrite5m, p.Input * cacheWrite5mFactor},
		"1-hour write":   {p.CacheWrite1h, p.Input * cacheWrite1hFactor},
		"read":           {p.CacheRead, p.Input * cacheReadFactor},
	} {
		if math.Abs(got[0]-got[1]) > 1e-9 {
			t.Errorf("default %s price %v, want %v", name, got[0], got[1])
		}
	}
}

func TestPriceConfig(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	tests := []struct {
		name string
		cfg  *PriceConfig
		want Prices
		err  string
	}{
		{"none: the defaults", nil, DefaultPrices, ""},
		{"input sets the cache prices by the API's factors", &PriceConfig{Input: f(3), Output: f(15)}, Prices{Input: 3, CacheWrite5m: 3.75, CacheWrite1h: 6, CacheRead: 0.3, Output: 15}, ""},
		{"a cache price given wins over the factor", &PriceConfig{Input: f(2), CacheRead: f(0.1)}, Prices{Input: 2, CacheWrite5m: 2.5, CacheWrite1h: 4, CacheRead: 0.1, Output: 10}, ""},
		{"only output", &PriceConfig{Output: f(20)}, Prices{Input: 2, CacheWrite5m: 2.5, CacheWrite1h: 4, CacheRead: 0.2, Output: 20}, ""},
		{"negative", &PriceConfig{CacheWrite1h: f(-1)}, Prices{}, "prices.cache_write_1h must be"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.cfg.Resolve()
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, pair := range [][2]float64{{got.Input, tt.want.Input}, {got.CacheWrite5m, tt.want.CacheWrite5m}, {got.CacheWrite1h, tt.want.CacheWrite1h}, {got.CacheRead, tt.want.CacheRead}, {got.Output, tt.want.Output}} {
				if math.Abs(pair[0]-pair[1]) > 1e-9 {
					t.Fatalf("got %+v, want %+v", got, tt.want)
				}
			}
			if tt.cfg.Set() != (tt.cfg != nil) {
				t.Errorf("Set() = %v for %+v", tt.cfg.Set(), tt.cfg)
			}
		})
	}
	if (&PriceConfig{}).Set() {
		t.Error("an empty prices object reports prices set")
	}
}

// Without prices set, the estimate says it uses the default model's list
// prices, and warns when another model is configured; prices set are
// mombot.json's, whatever the model.
func TestPriceSource(t *testing.T) {
	in := 3.0
	tests := []struct {
		name    string
		cfg     *PriceConfig
		model   string
		from    string
		warning string
	}{
		{"no prices, the default model", nil, "", "the list prices of claude-sonnet-5-5", ""},
		{"no prices, the default model named", &PriceConfig{}, DefaultPricesModel, "the list prices of claude-sonnet-5-5", ""},
		{"no prices, another model", nil, "claude-opus-5", "the list prices of claude-sonnet-5-5", "the model is claude-opus-5 but the prices are claude-sonnet-5-5's; set \"prices\" in the configuration file for a better estimate"},
		{"prices set, another model", &PriceConfig{Input: &in}, "claude-opus-5", "the prices in mombot.json", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.cfg.From(); got != tt.from {
				t.Errorf("From() = %q, want %q", got, tt.from)
			}
			if got := tt.cfg.ModelWarning(tt.model); got != tt.warning {
				t.Errorf("ModelWarning(%q) = %q, want %q", tt.model, got, tt.warning)
			}
		})
	}
}
