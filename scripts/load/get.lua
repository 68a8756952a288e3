-- wrk script: GET with the member token.
wrk.headers["Authorization"] = "Bearer " .. os.getenv("MEMBER")
