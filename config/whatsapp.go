package config

import (
	"cmp"
	"errors"
	"fmt"
	"strings"

	"github.com/mombot/mombot/whatsapp"
)

// WhatsAppOptions are the command's settings for WhatsAppConfig; the zero
// value is the production one.
type WhatsAppOptions struct {
	// SkipSignature is serve's --insecure-skip-signature: without an app
	// secret it sets AllowUnsigned, and the secret is not required.
	SkipSignature bool
	// InsecureTestEndpoints is MOMBOT_INSECURE_TEST_ENDPOINTS=1, read by
	// the command from the environment (never from the file): the Graph
	// API URL may be http and another host than Meta's.
	InsecureTestEndpoints bool
}

// WhatsAppConfig returns the webhook server's Cloud API settings: the
// file's (the business number's id, the Graph API's version and URL, the
// age past which a message is not answered, the family allowed to talk to
// the assistant) with the environment's, read through getenv: the secrets
// WHATSAPP_ACCESS_TOKEN, WHATSAPP_APP_SECRET and WHATSAPP_VERIFY_TOKEN, and
// WHATSAPP_PHONE_NUMBER_ID and WHATSAPP_GRAPH_URL, which win over the
// file's; opts adds what the command decides.
//
// Every setting the server needs and lacks, ANTHROPIC_API_KEY among them
// (the server answers with Claude), is named in one error, rather than one
// a run; without the app secret the error also says why it matters.
func (c *File) WhatsAppConfig(getenv func(string) string, opts WhatsAppOptions) (whatsapp.Config, error) {
	env := func(key string) string { return strings.TrimSpace(getenv(key)) }
	maxAge, _ := c.maxAge() // checked by Load
	insecure := opts.SkipSignature
	w := whatsapp.Config{
		AccessToken:           env("WHATSAPP_ACCESS_TOKEN"),
		AppSecret:             env("WHATSAPP_APP_SECRET"),
		VerifyToken:           env("WHATSAPP_VERIFY_TOKEN"),
		PhoneNumberID:         cmp.Or(env("WHATSAPP_PHONE_NUMBER_ID"), c.WhatsApp.PhoneNumberID),
		BaseURL:               cmp.Or(env("WHATSAPP_GRAPH_URL"), c.WhatsApp.GraphURL),
		InsecureTestEndpoints: opts.InsecureTestEndpoints,
		APIVersion:            c.WhatsApp.GraphVersion,
		MaxAge:                maxAge,
		Family:                c.Names(),
	}
	w.AllowUnsigned = insecure && w.AppSecret == ""
	var missing []string
	for _, v := range []struct{ value, name string }{
		{env("ANTHROPIC_API_KEY"), "ANTHROPIC_API_KEY"},
		{w.AccessToken, "WHATSAPP_ACCESS_TOKEN"},
		{w.AppSecret, "WHATSAPP_APP_SECRET"},
		{w.VerifyToken, "WHATSAPP_VERIFY_TOKEN"},
		{w.PhoneNumberID, "WHATSAPP_PHONE_NUMBER_ID"},
	} {
		if v.value == "" && !(v.name == "WHATSAPP_APP_SECRET" && insecure) {
			missing = append(missing, v.name)
		}
	}
	if len(missing) == 0 {
		return w, nil
	}
	verb := "is"
	if len(missing) > 1 {
		verb = "are"
	}
	msg := fmt.Sprintf("%s %s not set (see docs/whatsapp.md)", strings.Join(missing, ", "), verb)
	if w.AppSecret == "" && !insecure {
		msg += ". Without WHATSAPP_APP_SECRET anyone could post messages to the webhook (for local development only: --insecure-skip-signature)"
	}
	return w, errors.New(msg)
}
