package assistant

import (
	"context"

	"github.com/mombot/mombot/conversation"
)

// ledgerEntry returns what u adds to the usage ledger for one message. The
// cache writes the API reported in total but not by lifetime (a stand-in
// that leaves the split out, or a split that falls short of the total)
// count as 5-minute ones, so that no billed token is left out.
func (u Usage) ledgerEntry() conversation.Usage {
	w5, w1h := u.CacheCreation.Ephemeral5mInputTokens, u.CacheCreation.Ephemeral1hInputTokens
	if rest := u.CacheCreationInputTokens - w5 - w1h; rest > 0 {
		w5 += rest
	}
	return conversation.Usage{Messages: 1, Tokens: conversation.Tokens{
		Calls:              int64(u.Calls),
		InputTokens:        u.InputTokens,
		CacheWrite5mTokens: w5,
		CacheWrite1hTokens: w1h,
		CacheReadTokens:    u.CacheReadInputTokens,
		OutputTokens:       u.OutputTokens,
	}}
}

// recordUsage adds the message's usage to the ledger, whatever became of
// the message: answered, stopped at the tool cap, or failed after some
// calls had been billed. A message that made no successful call adds
// nothing, nor does the system sender, which is never stored. It runs even
// if ctx has ended, since the tokens were billed; a failure is logged and
// does not fail the reply.
func (t *turn) recordUsage(ctx context.Context) {
	if t.usage.Calls == 0 || t.in.From == conversation.SystemSender {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
	defer cancel()
	if err := t.a.ledger.AddUsage(ctx, t.in.From, t.a.now(), t.usage.ledgerEntry()); err != nil {
		t.log.Error("assistant: record usage", "err", err)
	}
}
