package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
)

// ErrUnauthorized marks a request without the configured bearer token
// (401).
var ErrUnauthorized = errors.New("unauthorized")

var errNoToken = fmt.Errorf("%w: send the server's auth_token as Authorization: Bearer <token>", ErrUnauthorized)

// openPaths answer without a token: orchestrators' probes carry none.
var openPaths = map[string]bool{"/healthz": true, "/readyz": true}

// authenticate requires "Authorization: Bearer <auth_token>" on every
// route but the probes and the web planner's files (GET and HEAD: a
// browser opening a page sends no header; the app then sends the token
// the user gives with every /v1 call) when a token is configured (401
// otherwise). The
// token is compared in constant time, as SHA-256 digests so that its
// length does not leak either.
func (s *Server) authenticate(c *gin.Context) {
	if s.tokenSum == nil || openPaths[c.Request.URL.Path] ||
		(c.Request.Method == http.MethodGet || c.Request.Method == http.MethodHead) && isWebPath(c.Request.URL.Path) {
		c.Next()
		return
	}
	scheme, token, _ := strings.Cut(c.GetHeader("Authorization"), " ")
	sum := sha256.Sum256([]byte(strings.TrimSpace(token)))
	if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare(sum[:], s.tokenSum) != 1 {
		c.Header("WWW-Authenticate", `Bearer realm="headroom"`)
		s.fail(c, errNoToken)
		return
	}
	c.Next()
}

// tokenDigest is the SHA-256 of the configured token (nil when none).
func tokenDigest(token string) []byte {
	if token == "" {
		return nil
	}
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}
