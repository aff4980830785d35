// Package phone is the one place where phone numbers are read, checked and
// hidden: WhatsApp's senders, the family's numbers in the configuration,
// the --from of ask and chat and the numbers given to history all go
// through it, so that "+1 (415) 555-1234", "14155551234" and
// "+14155551234" are one person with one conversation.
//
// A number is kept in E.164 form: "+" and 8 to 15 digits, the first of
// which (the country code's) is not 0. [Normalize] reads a number the way
// WhatsApp reports senders (a wa_id has no "+") or a person types it;
// [International] reads one a person wrote down for good, in the
// configuration, which must start with "+" so that a number written
// without its country code is an error rather than a number that never
// matches. [Mask] hides all but the last four digits for logs.
//
// The package uses the standard library only.
package phone
