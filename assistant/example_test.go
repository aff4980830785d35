package assistant_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/assistant/anthropictest"
	"github.com/mombot/mombot/assistant/lists"
	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/memstore"
)

// exampleServer stands in for api.anthropic.com in the examples.
func exampleServer() (*anthropictest.Server, func()) {
	t := &exampleTB{}
	return anthropictest.NewServer(t), t.cleanup
}

func Example() {
	srv, done := exampleServer()
	defer done()
	srv.Enqueue(anthropictest.Text("Tacos! You have everything but limes."))

	// In a deployment the client comes from anthropic.NewClient with
	// option.WithAPIKey, and the store is a jsonfile, sqlite or redis one.
	mem, err := conversation.New(memstore.New(), nil)
	if err != nil {
		panic(err)
	}
	la, _ := time.LoadLocation("America/Los_Angeles")
	a, err := assistant.New(srv.Client(), mem, &assistant.Options{
		Family: map[string]assistant.Person{"+14155551234": {Name: "Erin", Location: la}},
	})
	if err != nil {
		panic(err)
	}
	reply, err := a.Handle(context.Background(), assistant.Inbound{From: "+14155551234", Text: "what should we have for dinner?"})
	if err != nil {
		// reply.Text is still a kind sentence to send; the detail is logged.
		fmt.Println("failed:", err)
	}
	fmt.Println(reply.Text)
	// Output: Tacos! You have everything but limes.
}

// A deployment adds its own tools next to the built-in lists.
func ExampleNewRegistry() {
	mem, err := conversation.New(memstore.New(), nil)
	if err != nil {
		panic(err)
	}
	shared := lists.New(mem, nil)
	reg, err := assistant.NewRegistry(append(lists.Tools(shared), weather{})...)
	if err != nil {
		panic(err)
	}
	for _, t := range reg.Tools() {
		fmt.Println(t.Name())
	}
	// Output:
	// list_add
	// list_remove
	// list_show
	// list_restore
	// weather
}

// weather is a deployment's own tool.
type weather struct{}

func (weather) Name() string        { return "weather" }
func (weather) Description() string { return "Today's weather forecast for a city." }
func (weather) InputSchema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)
}
func (weather) Run(_ context.Context, c assistant.Call) (string, error) {
	var in struct {
		City string `json:"city"`
	}
	if err := c.DecodeInput(&in); err != nil {
		return "", err
	}
	return "Sunny in " + in.City + ", 18°C.", nil
}
