package backend

import (
	"crypto/rand"
	"encoding/hex"
	"strings"

	"github.com/bootproof/bootproof/ownership"
)

// domainOwnerPrefix starts the description of every domain a run
// defines; the owner process (ownership.Owner) follows.
const domainOwnerPrefix = "bootproof owner "

// domainOwner is this process's domain description.
func domainOwner() string { return domainOwnerPrefix + ownership.Self().String() }

// domainOwnerDead says whether a domain with this description belongs to
// no live run: its owner process is gone, or it names none (a leftover
// from before owners were recorded).
func domainOwnerDead(description string) bool {
	rest, ok := strings.CutPrefix(strings.TrimSpace(description), domainOwnerPrefix)
	if !ok {
		return true
	}
	o, err := ownership.ParseOwner(rest)
	return err != nil || !o.Alive()
}

// newRunID is a random run ID for domain names: two runs started at the
// same moment never share one.
func newRunID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
