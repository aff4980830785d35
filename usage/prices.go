package usage

import (
	"fmt"
	"math"

	"github.com/mombot/mombot/conversation"
)

// Prices are what the API charges, in US dollars per million tokens, by
// kind of token.
type Prices struct {
	Input        float64 `json:"input"`
	CacheWrite5m float64 `json:"cache_write_5m"`
	CacheWrite1h float64 `json:"cache_write_1h"`
	CacheRead    float64 `json:"cache_read"`
	Output       float64 `json:"output"`
}

// Prompt-cache prices relative to the input price, for every model: a
// 5-minute write costs 1.25x, a 1-hour write 2x, a read 0.1x
// (https://platform.claude.com/docs/en/about-claude/pricing, "Prompt
// caching"). They apply when mombot.json sets an input price and not the
// cache's.
const (
	cacheWrite5mFactor = 1.25
	cacheWrite1hFactor = 2
	cacheReadFactor    = 0.1
)

// DefaultPrices are the list prices of assistant.DefaultModel, Claude
// Sonnet 5.5: $2 input, $2.50 5-minute cache write, $4 1-hour cache write,
// $0.20 cache read and $10 output per million tokens
// (https://platform.claude.com/docs/en/models/sonnet-5-5/overview,
// "Pricing"; the same as the model pricing table of
// https://platform.claude.com/docs/en/about-claude/pricing).
var DefaultPrices = Prices{Input: 2, CacheWrite5m: 2.5, CacheWrite1h: 4, CacheRead: 0.2, Output: 10}

// DefaultPricesModel is the model DefaultPrices are for:
// assistant.DefaultModel, as a test checks.
const DefaultPricesModel = "claude-sonnet-5-5"

// PriceConfig is "prices" in mombot.json; each is US dollars per million
// tokens, and an absent one takes its default. Without the cache prices, an
// input price sets them too, by the API's factors. A nil *PriceConfig
// means the defaults.
type PriceConfig struct {
	Input        *float64 `json:"input"`
	CacheWrite5m *float64 `json:"cache_write_5m"`
	CacheWrite1h *float64 `json:"cache_write_1h"`
	CacheRead    *float64 `json:"cache_read"`
	Output       *float64 `json:"output"`
}

// Set reports whether any price is configured.
func (c *PriceConfig) Set() bool {
	return c != nil && (c.Input != nil || c.CacheWrite5m != nil || c.CacheWrite1h != nil || c.CacheRead != nil || c.Output != nil)
}

// From says where the prices Resolve returns come from, for
// Report.PricesFrom: the prices in mombot.json when any is set, otherwise
// the list prices of DefaultPricesModel.
func (c *PriceConfig) From() string {
	if c.Set() {
		return "the prices in mombot.json"
	}
	return "the list prices of " + DefaultPricesModel
}

// ModelWarning returns a one-line warning that the estimate uses another
// model's list prices when no price is set and model, the configured one
// ("" for the default), is not DefaultPricesModel; otherwise "".
func (c *PriceConfig) ModelWarning(model string) string {
	if c.Set() || model == "" || model == DefaultPricesModel {
		return ""
	}
	return fmt.Sprintf("the model is %s but the prices are %s's; set \"prices\" in the configuration file for a better estimate", model, DefaultPricesModel)
}

// Resolve returns the prices in force: the defaults, with what c sets. A
// negative, infinite or NaN price is an error that names its key.
func (c *PriceConfig) Resolve() (Prices, error) {
	p := DefaultPrices
	if c == nil {
		return p, nil
	}
	for _, f := range []struct {
		name string
		v    *float64
	}{{"input", c.Input}, {"cache_write_5m", c.CacheWrite5m}, {"cache_write_1h", c.CacheWrite1h}, {"cache_read", c.CacheRead}, {"output", c.Output}} {
		if f.v != nil && (*f.v < 0 || math.IsInf(*f.v, 0) || math.IsNaN(*f.v)) {
			return Prices{}, fmt.Errorf("prices.%s must be a price in US dollars per million tokens, at least 0, got %v", f.name, *f.v)
		}
	}
	if c.Input != nil {
		in := *c.Input
		p = Prices{Input: in, CacheWrite5m: in * cacheWrite5mFactor, CacheWrite1h: in * cacheWrite1hFactor, CacheRead: in * cacheReadFactor, Output: p.Output}
	}
	for _, f := range []struct {
		dst *float64
		v   *float64
	}{{&p.CacheWrite5m, c.CacheWrite5m}, {&p.CacheWrite1h, c.CacheWrite1h}, {&p.CacheRead, c.CacheRead}, {&p.Output, c.Output}} {
		if f.v != nil {
			*f.dst = *f.v
		}
	}
	return p, nil
}

// HaikuPrices are the list prices of Claude Haiku 4.5, the Haiku with
// published prices: $1 input, $1.25 5-minute cache write, $2 1-hour cache
// write, $0.10 cache read and $5 output per million tokens
// (https://platform.claude.com/docs/en/about-claude/pricing).
var HaikuPrices = Prices{Input: 1, CacheWrite5m: 1.25, CacheWrite1h: 2, CacheRead: 0.1, Output: 5}

// ListPrices returns the list prices of model, and whether it knows them:
// DefaultPrices for DefaultPricesModel, and HaikuPrices for the Haiku
// models the summaries use (claude-haiku-4-5, and claude-haiku-5-5, priced
// as Haiku 4.5 until its prices are published).
func ListPrices(model string) (Prices, bool) {
	switch model {
	case DefaultPricesModel:
		return DefaultPrices, true
	case "claude-haiku-4-5", "claude-haiku-5-5":
		return HaikuPrices, true
	}
	return Prices{}, false
}

// Cost returns the estimated cost of u at p, in US dollars: every call's
// tokens, the summarizer's included.
func (p Prices) Cost(u conversation.Usage) float64 { return p.TokensCost(u.Tokens) }

// TokensCost returns the estimated cost of t at p, in US dollars.
func (p Prices) TokensCost(t conversation.Tokens) float64 {
	return (float64(t.InputTokens)*p.Input + float64(t.CacheWrite5mTokens)*p.CacheWrite5m +
		float64(t.CacheWrite1hTokens)*p.CacheWrite1h + float64(t.CacheReadTokens)*p.CacheRead +
		float64(t.OutputTokens)*p.Output) / 1e6
}

// Pricing prices a ledger entry by model: the main model's calls at Main,
// the summarizer's at Summary.
type Pricing struct {
	Main, Summary Prices
}

// NewPricing returns the pricing of the main model's calls at main and of
// the summarizer's at summary, or at main when summary is nil.
func NewPricing(main Prices, summary *Prices) Pricing {
	p := Pricing{Main: main, Summary: main}
	if summary != nil {
		p.Summary = *summary
	}
	return p
}

// Cost returns the estimated cost of u, in US dollars: its main model's
// tokens at p.Main and its summarizer's at p.Summary.
func (p Pricing) Cost(u conversation.Usage) float64 {
	return p.Main.TokensCost(u.Main()) + p.Summary.TokensCost(u.Summarizer)
}

// readShare is the share of the prompt tokens read from the cache, or -1
// when there were none.
func readShare(u conversation.Usage) float64 {
	if u.PromptTokens() == 0 {
		return -1
	}
	return float64(u.CacheReadTokens) / float64(u.PromptTokens())
}
