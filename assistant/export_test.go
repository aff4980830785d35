package assistant

import (
	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/delivery"
)

// Locker returns the assistant's locker, which tests know to be local.
func (a *Assistant) Locker() *delivery.Local { return a.locker.(*delivery.Local) }

// Body renders the request body for history and msgs.
func (a *Assistant) Body(history, msgs []conversation.Message) ([]byte, error) {
	return a.body(history, msgs, "", nil)
}
