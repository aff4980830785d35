package whatsapp_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/mombot/mombot/delivery"
	"github.com/mombot/mombot/whatsapp"
)

// A server answering the family on WhatsApp: the wiring of a "serve"
// command, with the secrets from the environment.
func Example() {
	// Messages acknowledged to Meta wait here until answered, through a
	// crash or a restart, and the ids of those answered are kept here for
	// seven days, so that Meta's redeliveries are not answered again.
	inbox, err := delivery.OpenFile("data/whatsapp-inbox.json", nil)
	if err != nil {
		log.Fatal(err)
	}
	wa, err := whatsapp.New(whatsapp.Config{
		AccessToken:   os.Getenv("WHATSAPP_ACCESS_TOKEN"),
		PhoneNumberID: os.Getenv("WHATSAPP_PHONE_NUMBER_ID"),
		AppSecret:     os.Getenv("WHATSAPP_APP_SECRET"),
		VerifyToken:   os.Getenv("WHATSAPP_VERIFY_TOKEN"),
		Family:        map[string]string{"+1 650 555 1234": "Sheena"},
		Responder: whatsapp.ResponderFunc(func(ctx, held context.Context, msg whatsapp.Inbound) (string, error) {
			return "Hello " + msg.Name + ", you said: " + msg.Text, nil
		}),
		Inbox: inbox,
	})
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Addr: ":8080", Handler: wa, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		srv.Shutdown(shutdownCtx) // stop taking requests
		wa.Shutdown(shutdownCtx)  // then finish the messages in flight; the rest stay queued
	}()
	if err := srv.ListenAndServe(); err != http.ErrServerClosed {
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

func ExampleSign() {
	body := []byte(`{"object":"whatsapp_business_account","entry":[]}`)
	sig := whatsapp.Sign([]byte("app secret"), body)
	fmt.Println(whatsapp.ValidSignature([]byte("app secret"), body, sig))
	fmt.Println(whatsapp.ValidSignature([]byte("another secret"), body, sig))
	// Output:
	// true
	// false
}
