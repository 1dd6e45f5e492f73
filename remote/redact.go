package remote

import "net/url"

// RedactURL is rawURL as scheme://host only: an RPC provider's key is
// often in the path, the query or the user info, and must not reach
// clients (errors, follower_status) or logs.
func RedactURL(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return "(upstream)"
	}
	return u.Scheme + "://" + u.Host
}
