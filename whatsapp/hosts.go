package whatsapp

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/mombot/mombot/internal/origin"
)

// GraphHost is the Graph API's host: without Config.InsecureTestEndpoints,
// BaseURL must be https on it, so that the access token goes to Meta only.
const GraphHost = "graph.facebook.com"

// MediaDomain is Meta's domain for the files of the Cloud API: a media
// id's download URL is on one of its hosts, such as
// https://lookaside.fbsbx.com/whatsapp_business/attachments/?mid=...
const MediaDomain = "fbsbx.com"

// checkBaseURL returns the problem with the Graph API base URL u, if any:
// it must be https on GraphHost (port 443), with no user, path or query,
// unless insecure, which allows http and any host (a test's fake).
func checkBaseURL(u *url.URL, insecure bool) string {
	switch {
	case u.Scheme != "https" && u.Scheme != "http" || u.Host == "":
		return "is not an http(s) URL"
	case u.User != nil:
		return "must not hold a user or password"
	case strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.Fragment != "":
		return "must be a scheme and host only, such as " + DefaultBaseURL
	case insecure:
		return ""
	case origin.Of(u) != "https://"+GraphHost+":443":
		return fmt.Sprintf("must be %s: the access token goes to Meta only (tests set MOMBOT_INSECURE_TEST_ENDPOINTS=1 for another)", DefaultBaseURL)
	}
	return ""
}

// mediaURLAllowed reports whether the client sends its access token to
// the media URL u that the Graph API answered with: on the Graph API's own
// origin (base), or over https on a host of MediaDomain.
func mediaURLAllowed(u, base *url.URL) bool {
	if origin.Of(u) == origin.Of(base) {
		return true
	}
	host := strings.ToLower(u.Hostname())
	return u.Scheme == "https" && (u.Port() == "" || u.Port() == "443") &&
		(host == MediaDomain || strings.HasSuffix(host, "."+MediaDomain))
}
