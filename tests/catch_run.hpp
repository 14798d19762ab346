#pragma once
// The tests' mains run Catch2 through this, so that only tests/catch_impl.cpp compiles Catch2's
// implementation (its Session exists only there).

namespace hearth::test {

//! Catch2's session over the command line; its exit code.
int run_catch(int argc, char** argv);

}  // namespace hearth::test
