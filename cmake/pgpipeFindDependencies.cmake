# Shared by the build and by the installed pgpipeConfig.cmake, so a consumer's
# find_package(pgpipe) finds exactly what pgpipe was built against.
include(CMakeFindDependencyMacro)
set(THREADS_PREFER_PTHREAD_FLAG ON)
find_dependency(Threads)
find_dependency(OpenSSL 3)
find_dependency(Boost 1.81 CONFIG COMPONENTS headers json)
find_dependency(PkgConfig)
# libpq, libpqxx and libidn ship pkg-config files (not CMake packages) on Debian 12.
pkg_check_modules(PGPIPE_LIBPQ REQUIRED IMPORTED_TARGET libpq>=15)
pkg_check_modules(PGPIPE_LIBPQXX REQUIRED IMPORTED_TARGET libpqxx>=6.4)
pkg_check_modules(PGPIPE_LIBIDN REQUIRED IMPORTED_TARGET libidn>=1.38)
