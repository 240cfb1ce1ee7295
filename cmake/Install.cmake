# Installation: filled in with the library targets (see src/CMakeLists.txt).
