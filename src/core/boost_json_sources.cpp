// Boost.JSON's compiled part, built into pgpipe_core when
// PGPIPE_BOOST_JSON_HEADER_ONLY is on (src/CMakeLists.txt; otherwise this
// file is not compiled and pgpipe_core links Boost::json): for a toolchain
// whose standard library the system's libboost_json was not built with.
#include <boost/json/src.hpp>
