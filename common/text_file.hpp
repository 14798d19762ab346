#pragma once
// Whole configuration and report files in and out, with errors that name the path and the
// system's reason: every loader and every `--json` writer goes through these two.

#include <string>

#include "common/result.hpp"

namespace hearth {

//! The file's bytes; errc::io "<path>: cannot open: <reason>" (or "cannot read").
result<std::string> read_text_file(const std::string& path);
//! Replaces the file with `text`; errc::io "<path>: cannot write: <reason>".
status<> write_text_file(const std::string& path, const std::string& text);

}  // namespace hearth
