# A Conan 2 recipe kept with the sources it builds: from a clone,
#   conan create packaging/conan -o "pgpipe/*:blocking=False"
# builds that clone (exports_sources copies the tree; a Conan Center recipe
# would download a release archive in source()).
import os

from conan import ConanFile
from conan.tools.cmake import CMake, CMakeDeps, CMakeToolchain, cmake_layout
from conan.tools.files import copy


class PgpipeConan(ConanFile):
    name = "pgpipe"
    version = "0.1.0"
    license = "MIT"
    description = "C++20 PostgreSQL client: pipelined async and pooled blocking drivers, SCRAM toolkit"
    topics = ("postgresql", "libpq", "asio", "scram")
    settings = "os", "arch", "compiler", "build_type"
    # One option per component (core and pq are always built): async alone
    # needs neither libpqxx nor OpenSSL nor ICU.
    options = {"async": [True, False], "blocking": [True, False], "scram": [True, False], "fPIC": [True, False]}
    default_options = {"async": True, "blocking": True, "scram": True, "fPIC": True}

    def export_sources(self):
        root = os.path.join(self.recipe_folder, "..", "..")
        for pattern in ("CMakeLists.txt", "LICENSE", "cmake/*", "include/*", "src/*"):
            copy(self, pattern, root, self.export_sources_folder)

    def layout(self):
        cmake_layout(self)

    def requirements(self):
        # Boost headers are in pgpipe's public headers (uuid, JSON, Asio):
        # transitive_headers so a consumer compiles them too.
        self.requires("boost/[>=1.81]", transitive_headers=True)
        self.requires("libpq/[>=14]", transitive_headers=True)
        if self.options.blocking:
            self.requires("libpqxx/[>=6.4]", transitive_headers=True)
        if self.options.scram:
            self.requires("openssl/[>=3 <4]")
            self.requires("icu/[>=60]")

    def validate(self):
        from conan.errors import ConanInvalidConfiguration
        if self.settings.os != "Linux":
            raise ConanInvalidConfiguration("pgpipe is built and tested on Linux only")

    def generate(self):
        components = [c for c in ("async", "blocking", "scram") if self.options.get_safe(c)]
        tc = CMakeToolchain(self)
        tc.cache_variables["PGPIPE_COMPONENTS"] = ",".join(components)
        tc.cache_variables["PGPIPE_SASLPREP"] = "icu"
        for program in ("TESTS", "BENCH", "EXAMPLES", "TOOLS"):
            tc.cache_variables[f"PGPIPE_BUILD_{program}"] = False
        tc.generate()
        CMakeDeps(self).generate()

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def package(self):
        copy(self, "LICENSE", self.source_folder, os.path.join(self.package_folder, "licenses"))
        CMake(self).install()

    def package_info(self):
        # pgpipe installs its own pgpipeConfig.cmake (components, version
        # checks, the same dependency lookup as its build): consumers use it
        # instead of a generated one.
        self.cpp_info.set_property("cmake_find_mode", "none")
        self.cpp_info.builddirs.append(os.path.join("lib", "cmake", "pgpipe"))
