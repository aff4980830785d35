package conversation

import "fmt"

// prepareTurn returns turn as [Memory.Save] stores it: every message passed
// through sanitize, the turn's extra keys compacted, and the result
// checked by [ValidateTurn], and marks it checked. Its errors wrap
// [ErrInvalidTurn]. The returned turn shares no memory with turn.
func prepareTurn(turn Turn) (Turn, error) {
	extra, err := cleanExtra(turn.Extra, "messages")
	if err != nil {
		return Turn{}, fmt.Errorf("%w: %v", ErrInvalidTurn, err)
	}
	clean := Turn{Messages: make([]Message, len(turn.Messages)), Extra: extra}
	for i, msg := range turn.Messages {
		if clean.Messages[i], err = sanitize(msg); err != nil {
			return Turn{}, fmt.Errorf("%w: messages.%d: %v", ErrInvalidTurn, i, err)
		}
	}
	ids, err := validateTurn(clean.Messages)
	if err != nil {
		return Turn{}, err
	}
	clean.checked = &checkedTurn{toolUseIDs: ids}
	return clean, nil // sanitize and cleanExtra copied what they kept
}
