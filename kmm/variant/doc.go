// Package variant names the calibration variants of bootproof's
// NodeModulesConfig reconciler: each is the correct reconciler with exactly
// one seeded defect (a known-bad operator bootproof must fail) or one
// injected slowness (a known-good operator bootproof must pass). They are
// the ground truth 'make calibrate' measures bootproof's sensitivity and
// specificity against.
//
// The package is the vocabulary shared by the reconciler (kmm/controller
// and kmm, which implement each variant), the 'bootproof kmm --variant'
// flag, the harness's in-process subject and the calibration report. It
// imports nothing of bootproof.
package variant
