package whatsapp_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"

	"github.com/mombot/mombot/apology"
	"github.com/mombot/mombot/delivery"
	"github.com/mombot/mombot/whatsapp"
	"github.com/mombot/mombot/whatsapp/graphtest"
)

// echo answers each message with its text: the delivery.Handler that
// mombot serve makes of the assistant.
type echo struct{ wa *whatsapp.Client }

func (e echo) Answer(ctx, held context.Context, m delivery.Message) ([]string, error) {
	in, err := e.wa.Inbound(ctx, m)
	switch {
	case errors.Is(err, whatsapp.ErrNoReply):
		return nil, fmt.Errorf("%w: %w", delivery.ErrSkip, err)
	case err != nil: // a message the assistant cannot be asked about
		return whatsapp.Split(apology.Message(err), whatsapp.MaxTextLength), nil
	}
	return whatsapp.Split("Hello "+in.Name+", you said: "+in.Text, whatsapp.MaxTextLength), nil
}

func (e echo) Send(ctx context.Context, m delivery.Message, parts []string) (int, error) {
	sent, err := e.wa.Send(ctx, m, parts)
	if whatsapp.Temporary(err) {
		err = fmt.Errorf("%w: %w", delivery.ErrTemporary, err)
	}
	return len(sent), err
}

// A server answering the family on WhatsApp: the webhook keeps each
// message in a delivery pipeline, which answers it with a handler that
// reads it and sends the reply through the Client.
func Example() {
	wa, err := whatsapp.NewClient(whatsapp.Config{
		AccessToken:   os.Getenv("WHATSAPP_ACCESS_TOKEN"),
		PhoneNumberID: os.Getenv("WHATSAPP_PHONE_NUMBER_ID"),
		AppSecret:     os.Getenv("WHATSAPP_APP_SECRET"),
		VerifyToken:   os.Getenv("WHATSAPP_VERIFY_TOKEN"),
		Family:        map[string]string{"+1 650 555 1234": "Sheena"},
	})
	if err != nil {
		log.Fatal(err)
	}
	// Messages acknowledged to Meta wait here until answered, through a
	// crash or a restart, and the ids of those answered are kept here for
	// seven days, so that Meta's redeliveries are not answered again.
	inbox, err := delivery.OpenFile("data/whatsapp-inbox.json", nil)
	if err != nil {
		log.Fatal(err)
	}
	pipe := delivery.New(echo{wa}, &delivery.Options{Inbox: inbox})
	srv, err := whatsapp.NewServer(wa, pipe, nil)
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	// Stop taking requests, then finish the messages in flight; the rest
	// stay in the inbox for the next start.
	if err := srv.ListenAndServe(ctx, ":8080", nil); err != nil {
		log.Fatal(err)
	}
}

func ExampleSplit() {
	for _, part := range whatsapp.Split("First paragraph.\n\nSecond paragraph, a little longer.", 40) {
		fmt.Printf("%q\n", part)
	}
	// Output:
	// "First paragraph."
	// "Second paragraph, a little longer."
}

func ExampleValidSignature() {
	body := []byte(`{"object":"whatsapp_business_account","entry":[]}`)
	sig := graphtest.Sign([]byte("app secret"), body)
	fmt.Println(whatsapp.ValidSignature([]byte("app secret"), body, sig))
	fmt.Println(whatsapp.ValidSignature([]byte("another secret"), body, sig))
	// Output:
	// true
	// false
}
