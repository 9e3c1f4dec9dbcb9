// Package trace is the vocabulary of a case's trace: the typed events the
// engine and its observer record and the reports draw (trace.json, the
// HTML timeline). It is a leaf: the engine (package scenarios), the
// observer (scenarios/observe) and the reports share it and none of them
// owns it.
//
// What a report draws is in an Event's typed fields; Detail is prose for
// people (tooltips, the trace file) and is never parsed.
package trace
