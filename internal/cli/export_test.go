package cli

// MutatePasses exposes mutatePasses to the package's external tests.
var MutatePasses = mutatePasses
