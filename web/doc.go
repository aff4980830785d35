// Package web is the family's own page: a small web server, apart from
// the WhatsApp webhook, on which the family's admin chats as any family
// member, reads and clears what the assistant remembers of each person
// (the conversation, the notes they see, their running summary), edits
// the family's lists, and sees what the assistant costs.
//
// # Pages
//
//	GET  /                                the family, and how to name it when mombot.json does not
//	GET  /people/{id}                     a person's conversation as a chat thread (tool calls shown), their notes and summary
//	POST /people/{id}/messages            send a message as them (multipart: message, attachment)
//	POST /people/{id}/clear               forget their conversation
//	POST /people/{id}/notes/{n}/forget    forget note #n, which they see, everywhere
//	POST /people/{id}/summary/delete      delete their running summary
//	GET  /people/{id}/pending             {"pending":bool}, for the script that waits for a reply
//	GET  /lists                           the family's lists
//	POST /lists/items                     add an item (list, item)
//	POST /lists/items/delete              remove an item (list, item)
//	POST /lists/delete                    delete a list (list)
//	GET  /usage[?person={id}]             usage and estimated cost per person and day, as an SVG chart
//	GET  /login, POST /login, POST /logout
//	GET  /static/{file}                   the style sheet and the script
//
// People are named in URLs by an id made from their name ("erin"), never
// by their phone number, which the pages show masked.
//
// A message sent from the page is answered by the same [Assistant] as the
// WhatsApp messages, with the same memory and tools, under the sender's
// lock of the same [delivery.Locker], so that a message from the page and
// one from WhatsApp for the same person never run at once. The answer
// shows on the page, and is not sent to the person's WhatsApp; it joins
// their conversation all the same. Answering goes on in the background:
// the post redirects to the thread at once (Post/Redirect/Get), which
// shows the message as pending and reloads itself until the reply is in,
// with a meta refresh without JavaScript and a small script otherwise.
//
// # Safety
//
// Without a token ([Options].Token) there is no login, and the page must
// listen on a loopback address only ([CheckAddr]). With one, every
// request but the login form needs a session, got by typing the token in
// the login form; sessions are signed cookies (HttpOnly, SameSite=Strict)
// that last [SessionLife] and end when the token changes. Every change is
// a POST that carries a CSRF token, bound to the session, in a hidden
// field named "csrf"; one without it is refused with 403. Every page is
// rendered by html/template, which escapes what the model, the people and
// the lists say, under a Content-Security-Policy that allows no inline
// script and no inline style, nor anything from another origin.
package web
