package backend

import (
	"os/exec"
	"regexp"
	"testing"

	"github.com/bootproof/bootproof/ownership"
)

func TestDomainOwner(t *testing.T) {
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	self := ownership.Self()
	cases := []struct {
		desc string
		dead bool
	}{
		{domainOwner(), false},
		{domainOwnerPrefix + (ownership.Owner{PID: self.PID, Start: self.Start + 1}).String(), true}, // pid reused
		{domainOwnerPrefix + (ownership.Owner{PID: c.Process.Pid, Start: 1}).String(), true},         // exited
		{"", true},
		{"someone else's VM", true},
		{domainOwnerPrefix + "garbage", true},
	}
	for _, tc := range cases {
		if got := domainOwnerDead(tc.desc); got != tc.dead {
			t.Errorf("domainOwnerDead(%q) = %v, want %v", tc.desc, got, tc.dead)
		}
	}
	a, b := newRunID(), newRunID()
	if a == b || !regexp.MustCompile(`^[0-9a-f]{8}$`).MatchString(a) {
		t.Errorf("run IDs %q, %q", a, b)
	}
}
