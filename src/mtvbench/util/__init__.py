"""Small shared mechanisms that know nothing of the benchmark: files written whole or not at all
(:mod:`.files`), strict JSON (:mod:`.jsonio`) and settings (:mod:`.strict`), storable text (:mod:`.storable`),
escaping for every output sink (:mod:`.escape`), keys kept out of messages (:mod:`.secrets`), cache folders
(:mod:`.paths`), the tables users give (:mod:`.rowfiles`), SIGTERM handling (:mod:`.signals`) and the garbage
collector during long runs (:mod:`.heap`)."""
