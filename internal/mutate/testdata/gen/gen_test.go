package gen

import "testing"

func TestNothing(t *testing.T) {}
