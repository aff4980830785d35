// Package usage reports what the assistant's API calls cost: it sums the
// usage ledger's days ([conversation.Memory.UsageSince]) per person and in
// total, and estimates their cost in US dollars from per-million-token
// [Prices], for the usage command's table and JSON. The ledger itself, and
// what it counts, belong to package conversation and its stores.
//
// [PriceConfig] is the "prices" object of mombot.json: every price is
// optional; the defaults are the list prices of the default model
// ([DefaultPricesModel]), and an input price alone sets the cache prices
// by the API's factors. docs/usage.md says where the prices come from.
package usage
