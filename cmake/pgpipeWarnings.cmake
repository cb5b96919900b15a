# Warnings for every target built here (not for consumers of the installed package).
add_compile_options(-Wall -Wextra -Wpedantic)
if(PGPIPE_WERROR)
  add_compile_options(-Werror)
endif()
