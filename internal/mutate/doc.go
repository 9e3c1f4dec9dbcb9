// Package mutate measures how much of the reconciler's behaviour the
// scenario catalog can tell apart: mutation testing of kmm/controller,
// kmm/detect and kmm/worker.
//
// Generate makes the mutants mechanically from the packages' syntax and
// types (conditions negated and replaced by true or false, boundaries
// shifted, && and || swapped, statements and calls removed, break and
// return inserted in loops, break and continue swapped, arithmetic and
// constants changed, arguments of one type swapped), each one small change
// to one file. A mutant whose change lies wholly in a message for people
// (a log line, an Event, an error's or a reason's text) is marked
// unobservable by construction and not judged.
//
// Build compiles bootproof with one mutant through the go command's
// -overlay, so the checkout is never written. Judge runs each mutant's
// 'bootproof kmm' as the subject of one case at a time on the embedded
// cluster with simulated nodes, scoped to the case (--selector), the
// scenarios that killed most so far first, and stops a mutant at its
// first kill; several mutants are judged side by side. A mutant is
// killed only by a case whose verdict is fail through a judged
// assertion; a case that ends in an error is never a kill, and a mutant
// with an error and no kill is mislabelled. A survivor is judged by the
// whole catalog, then looked up in the triage file, which says for each
// equivalent mutant why it cannot change behaviour.
//
// The unmutated reconciler is judged first by the whole catalog: a
// catalog that fails it cannot judge its mutants, and the run stops.
package mutate
