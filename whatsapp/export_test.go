package whatsapp

// Joined exposes joined to the tests of package whatsapp_test: whether
// text[i] belongs to the same user-perceived character as text[i-1].
var Joined = joined
