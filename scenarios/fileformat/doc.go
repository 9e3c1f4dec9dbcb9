// Package fileformat reads bootproof's input files, scenario files and
// subject files alike:
//
//   - ReadInputFile reads a regular file of at most a size limit;
//   - DecodeVersioned checks the apiVersion and kind a file opens with
//     (Header, against contract's versions and kinds; a file without
//     them is accepted with a DeprecationWarning) and decodes the rest
//     with DecodeStrict;
//   - DecodeStrict refuses unknown fields, wrong types and a second
//     document, and every error it returns is a *FieldError naming the
//     file, the line and the field path.
//
// A type's own UnmarshalYAML reports a bad value as a *FieldError with
// the node's Line and Column, and the decoder places it at its field.
package fileformat
