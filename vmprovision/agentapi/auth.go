package agentapi

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
)

// Every request to the control API carries the node's secret:
//
//	Authorization: Bearer <secret>
//
// The host makes the secret (NewSecret) when it writes the node's
// initramfs and puts it in the agent's configuration file (mode 0600); the
// agent answers a request without it, or with another one, 401
// Unauthorized and does nothing. Only the host process and the guest know
// it: it is in neither the domain XML nor QEMU's command line.
const (
	// HeaderAuthorization carries AuthScheme and the secret.
	HeaderAuthorization = "Authorization"
	// AuthScheme is the scheme of HeaderAuthorization.
	AuthScheme = "Bearer"
	// SecretBytes is the secret's entropy; it travels as 2*SecretBytes
	// lower-case hex digits.
	SecretBytes = 32
)

// NewSecret makes a node's secret from crypto/rand.
func NewSecret() (string, error) {
	b := make([]byte, SecretBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("agent secret: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// CheckSecret reports whether s has the form NewSecret makes.
func CheckSecret(s string) error {
	if len(s) != 2*SecretBytes {
		return fmt.Errorf("secret has %d characters, want %d hex digits", len(s), 2*SecretBytes)
	}
	if _, err := hex.DecodeString(s); err != nil {
		return fmt.Errorf("secret is not hex: %w", err)
	}
	return nil
}

// SetAuthorization adds the secret to a request to the agent.
func SetAuthorization(r *http.Request, secret string) {
	r.Header.Set(HeaderAuthorization, AuthScheme+" "+secret)
}

// Authorized reports whether r carries secret, comparing in constant
// time. An empty or malformed secret authorizes nothing.
func Authorized(r *http.Request, secret string) bool {
	if CheckSecret(secret) != nil {
		return false
	}
	scheme, got, ok := strings.Cut(r.Header.Get(HeaderAuthorization), " ")
	if !ok || !strings.EqualFold(scheme, AuthScheme) {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(secret)) == 1
}
